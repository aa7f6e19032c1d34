import { ProcessCreate, ProcessListQuery, ProcessResponse, ProcessUpdate } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import type { RouteContext } from '../../http/route';
import { addCrudRoutes } from './crud';

/** /api/v1/settings/processes: every field of ProcessResponse is settable here. */
export function processSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const references =
    '`input_schema` must itself be a valid JSON Schema within the limits of admin-supplied schemas (at most 64 KiB, ' +
    '32 levels, 500 subschemas, 100 patterns of at most 512 characters in the syntax RE2 runs: no backreferences or ' +
    'lookaround; `$id` only at the root, `$ref` only local, `#` or `#/…`, to a subschema); the 422 names the limit or the ' +
    'pattern. `folder_id` and `on_success_trigger_process_id` must be records ' +
    'of the same workspace (else 422), and a success chain may not lead back to the process.';
  addCrudRoutes(router, rc, {
    resource: 'process',
    plural: 'processes',
    noun: 'process',
    tag: 'settings: processes',
    schemas: { create: ProcessCreate, update: ProcessUpdate, list: ProcessListQuery, response: ProcessResponse },
    notes: { create: references, update: references, list: 'Filter by `folder_id` and `is_active`.', deactivate: 'An inactive process is left out of `GET /processes/list` and refuses webhook triggers.' },
  });
  return router;
}
