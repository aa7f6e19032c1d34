import type { TSchema } from '@sinclair/typebox';
import {
  IdParams, MachineCreate, MachineSeriesResponse, SERIES_MAX_MACHINES, SeriesQuery, MachineListQuery, MachineResponse, MachineUpdate, MachineWithKeyResponse,
} from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import { addRoute, type RouteContext } from '../../http/route';
import { ok } from '../../http/respond';
import { ADMIN, MEMBER, addCrudRoutes, tenantOf, userActorOf } from './crud';

/**
 * /api/v1/settings/machines: robot hosts (record: docs/decisions/machine-record.md). Create and
 * rotate-key return the agent's machine key in `machine_key`, once; only its SHA-256 is stored.
 */
export function machineSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const tags = ['settings: machines'];
  const { catalog } = rc.deps.engine;

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/machines',
    operationId: 'createMachine',
    summary: 'Create a machine',
    description:
      'Returns the machine record with `machine_key`, the secret its agent authenticates with, shown this once. ' +
      '`slots` 1..64 (default 1); `kind` `unattended` (default) or `attended` (never auto-selected). Unknown body fields or invalid values → 422; a name already used → 409. Audited as `create_machine`.',
    tags,
    auth: ADMIN,
    // widened: inferring this schema's static type through addRoute's generics is too deep for tsc
    body: MachineCreate as TSchema,
    response: MachineWithKeyResponse,
    successStatus: 201,
    errors: [409, 422],
  }, async (ctx, input) => {
    const body = input.body() as MachineCreate;
    const { record, machineKey } = await catalog.save(userActorOf(ctx), tenantOf(ctx), 'machine', 'new', body as Record<string, unknown>);
    ok(ctx, { ...record, machine_key: machineKey }, 201);
  });

  addRoute(router, rc, {
    method: 'post',
    path: '/settings/machines/:id/rotate-key',
    operationId: 'rotateMachineKey',
    summary: 'Issue a new machine key',
    description: 'The old key stops working at once; the new one is returned in `machine_key`, once. Audited as `rotate_machine_key`.',
    tags,
    auth: ADMIN,
    params: IdParams,
    response: MachineWithKeyResponse,
    errors: [404, 422],
  }, async (ctx, input) => {
    const { id } = input.params();
    const { record, machineKey } = await catalog.machines.rotateKey(userActorOf(ctx), tenantOf(ctx), id);
    ok(ctx, { ...record, machine_key: machineKey });
  });

  // before the CRUD routes, so that `series` is not taken for a machine's id
  addRoute(router, rc, {
    method: 'get',
    path: '/settings/machines/series',
    operationId: 'getMachineSeries',
    summary: 'Busy slots over time',
    description:
      'Per-minute samples of the active machines\' busy and total slots (taken by the dispatcher), bucketed: `window=hour` ' +
      `(default) by minute, \`window=day\` by 5 minutes, each bucket its highest sample. \`total\`: every active machine together; \`machines\`: the first ${SERIES_MAX_MACHINES} by name. ` +
      'Any member of the workspace.',
    tags,
    auth: MEMBER,
    query: SeriesQuery,
    response: MachineSeriesResponse,
    errors: [422],
  }, async (ctx, input) => {
    ok(ctx, await catalog.machines.series(tenantOf(ctx), input.query()));
  });

  addCrudRoutes(router, rc, {
    resource: 'machine',
    plural: 'machines',
    noun: 'machine',
    tag: tags[0]!,
    readers: 'members',
    skip: ['create'],
    schemas: { create: MachineCreate, update: MachineUpdate, list: MachineListQuery, response: MachineResponse },
    notes: {
      list: 'Filter by `status` (online, offline, busy) and `is_active`.',
      update: '`kind`: `unattended` or `attended` (a person\'s desktop robot, never auto-selected; only a job, trigger or schedule naming it runs there).',
      deactivate: 'An inactive machine is never auto-selected for a job.',
    },
  });
  return router;
}
