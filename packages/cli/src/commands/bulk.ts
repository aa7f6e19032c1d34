import { CLI_ACTOR, validate, type BulkAsked, type Engine } from '@svc/core';
import { ItemActionBody, JobActionBody, type BulkActionResponse } from '@svc/core/schemas';
import { EXCEPTION_TYPES } from '@svc/core/queue-items/exception-types';
import { optionalInt, optionalList, optionalString, parse, positional, required, type Parsed } from '../args';
import type { Command, CommandContext } from '../context';
import { CliError, EXIT, UsageError } from '../errors';
import { record } from '../output';

export const BULK_HELP = `Usage:
  svc bulk items --tenant T --queue QUEUE --action ACTION [filter] [--priority N] [--postpone DATE|none] [--include-business]
  svc bulk jobs  --tenant T --action stop|retry [filter] [--include-business]
  svc bulk show   --tenant T ACTION_ID
  svc bulk cancel --tenant T ACTION_ID

  Acts on every item of a queue, or job of a workspace, that matches the filter (no filter: all),
  or on --ids. Items: redrive (dead_letter → new, retries from zero), retry (dead_letter → new,
  one more attempt), delete (not in progress), set_priority --priority 1..5, postpone --postpone
  DATE (none clears it). Jobs: stop (active ones), retry (failed, timed out or stopped, once).
  A retry leaves business failures alone (failed items, failed jobs: final) unless asked with
  --include-business, which re-runs them too (items: failed → new, retry_count kept).
  The action runs here, chunk by chunk, printing its progress; a crash or Ctrl-C leaves every row
  done or untouched, and the platform's dispatcher carries on from the last chunk.

  filter:  --status S  --created-after DATE  --created-before DATE  --ids ID,ID,…
           items: --reference R  --data JSON  --exception-type business|application
           jobs:  --process NAME|ID  --machine NAME|ID  --input-data JSON
  --include-business  retry only: also re-run business failures (needed with --exception-type business)
  --dry-run      only count what the action would change
  --background   record the action and leave it to the platform's dispatcher
  --json         print JSON for scripts`;

const FILTER_FLAGS = {
  tenant: { type: 'string' }, queue: { type: 'string' }, action: { type: 'string' },
  status: { type: 'string' }, reference: { type: 'string' }, data: { type: 'string' },
  process: { type: 'string' }, machine: { type: 'string' }, 'input-data': { type: 'string' },
  'created-after': { type: 'string' }, 'created-before': { type: 'string' }, ids: { type: 'string' },
  priority: { type: 'string' }, postpone: { type: 'string' }, 'dry-run': { type: 'boolean' }, background: { type: 'boolean' },
  'exception-type': { type: 'string' }, 'include-business': { type: 'boolean' },
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function jsonFlag(p: Parsed, name: string): unknown {
  const text = optionalString(p, name);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--${name} must be a JSON object, e.g. '{"customer":"ACME"}'`, BULK_HELP);
  }
}

/** The flags that are set, as the body's filter (validation names the wrong ones). */
function filterOf(p: Parsed, extra: Record<string, unknown>): Record<string, unknown> | undefined {
  const f: Record<string, unknown> = {
    status: optionalString(p, 'status'), created_after: optionalString(p, 'created-after'), created_before: optionalString(p, 'created-before'), ...extra,
  };
  const set = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
  return p.values.ids !== undefined && Object.keys(set).length === 0 ? undefined : set;
}

async function catalogId(engine: Engine, tenantId: string, resource: 'process' | 'machine' | 'queue', ref: string): Promise<string> {
  if (resource !== 'queue' && UUID.test(ref)) return ref;
  const row = await engine.catalog.findByName(tenantId, resource, ref);
  if (!row) throw new CliError(`no ${resource} "${ref}" in this workspace`, EXIT.notFound, 'NOT_FOUND');
  return row.id;
}

/** Asks for an action on a queue's items (plain data in, the answer out). */
export async function bulkItems(engine: Engine, tenantId: string, queueName: string, body: unknown): Promise<BulkAsked> {
  const queue = await engine.catalog.findByName(tenantId, 'queue', queueName);
  if (!queue) throw new CliError(`no queue "${queueName}" in this workspace`, EXIT.notFound, 'NOT_FOUND');
  return engine.bulk.askItems(CLI_ACTOR, queue, validate(ItemActionBody, body));
}

export function bulkJobs(engine: Engine, tenantId: string, body: unknown): Promise<BulkAsked> {
  return engine.bulk.askJobs(CLI_ACTOR, tenantId, validate(JobActionBody, body));
}

/** Runs the action's chunks here until it ends, reporting each step. */
export async function runToEnd(engine: Engine, tenantId: string, id: string, onStep: (a: BulkActionResponse) => void): Promise<BulkActionResponse> {
  for (;;) {
    await engine.bulk.run({ actionId: id, budgetMs: 0 });
    const a = await engine.bulk.get(tenantId, id);
    onStep(a);
    if (a.status === 'completed' || a.status === 'cancelled') return a;
    // taken by another runner (the dispatcher): follow it rather than compete for its lease
    if (a.status === 'running') await new Promise((r) => setTimeout(r, 200));
  }
}

/** `--exception-type`: one of the two kinds, for items (a job's list has no such filter). */
function exceptionTypeFlag(p: Parsed, target: 'items' | 'jobs'): string | undefined {
  const value = optionalString(p, 'exception-type');
  if (value === undefined) return undefined;
  if (target === 'jobs') throw new UsageError('--exception-type filters items only (svc bulk items)', BULK_HELP);
  if (!(EXCEPTION_TYPES as readonly string[]).includes(value)) throw new UsageError(`--exception-type must be ${EXCEPTION_TYPES.join(' or ')}`, BULK_HELP);
  return value;
}

async function ask(ctx: CommandContext, p: Parsed, target: 'items' | 'jobs'): Promise<void> {
  const tenantRef = required(p, 'tenant', BULK_HELP);
  const action = required(p, 'action', BULK_HELP);
  const exceptionType = exceptionTypeFlag(p, target);
  if (action === 'retry' && exceptionType === 'business' && !p.values['include-business']) {
    throw new UsageError('--exception-type business needs --include-business: a retry leaves business failures alone unless asked', BULK_HELP);
  }
  const engine = await ctx.engine();
  const o = ctx.output(!!p.values.json);
  // include_business only when asked: the engine refuses it on any action but retry, naming the flag
  const common = { action, ids: optionalList(p, 'ids'), dry_run: p.values['dry-run'] === true, include_business: p.values['include-business'] === true };
  let asked: BulkAsked;
  let tenantId: string;
  if (target === 'items') {
    const queue = required(p, 'queue', BULK_HELP);
    const postpone = optionalString(p, 'postpone');
    const body = {
      ...common,
      filter: filterOf(p, { reference: optionalString(p, 'reference'), exception_type: exceptionType, data: jsonFlag(p, 'data') }),
      priority: optionalInt(p, 'priority'),
      postpone: postpone === undefined ? undefined : postpone === 'none' ? null : postpone,
    };
    const tenant = await engine.tenants.resolve(tenantRef);
    tenantId = tenant.id;
    asked = await bulkItems(engine, tenant.id, queue, dropUndefined(body));
  } else {
    const tenant = await engine.tenants.resolve(tenantRef);
    tenantId = tenant.id;
    const proc = optionalString(p, 'process');
    const machine = optionalString(p, 'machine');
    const body = {
      ...common,
      filter: filterOf(p, {
        process_id: proc === undefined ? undefined : await catalogId(engine, tenant.id, 'process', proc),
        machine_id: machine === undefined ? undefined : await catalogId(engine, tenant.id, 'machine', machine),
        input_data: jsonFlag(p, 'input-data'),
      }),
    };
    asked = await bulkJobs(engine, tenant.id, dropUndefined(body));
  }
  if (asked.dryRun) {
    o.result({ dry_run: true, total: asked.total });
    o.text(`${asked.total} ${target === 'items' ? 'item(s)' : 'job(s)'} would change`);
    return;
  }
  let shown = -1;
  const done = p.values.background ? asked.action : await runToEnd(engine, tenantId, asked.action.id, (a) => {
    if (!o.json && a.done !== shown) ctx.io.stderr(`${a.done}/${a.total}\n`);
    shown = a.done;
  });
  o.result(done);
  o.text(record(`Bulk action ${done.id}: ${done.status}`, { action: done.action, total: done.total, done: done.done, changed: done.changed }));
}

function dropUndefined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && !(v === false)));
}

async function runBulk(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'items':
    case 'jobs': {
      const p = parse(rest, FILTER_FLAGS, BULK_HELP);
      if (p.values.help) return void ctx.output(false).text(BULK_HELP);
      return ask(ctx, p, sub);
    }
    case 'show':
    case 'cancel': {
      const p = parse(rest, { tenant: { type: 'string' } }, BULK_HELP, 1);
      if (p.values.help) return void ctx.output(false).text(BULK_HELP);
      const tenantRef = required(p, 'tenant', BULK_HELP);
      const id = positional(p, 0, 'action id', BULK_HELP);
      if (!UUID.test(id)) throw new UsageError(`"${id}" is not an action id`, BULK_HELP);
      const engine = await ctx.engine();
      const tenant = await engine.tenants.resolve(tenantRef);
      const a = sub === 'show' ? await engine.bulk.get(tenant.id, id) : await engine.bulk.cancel(CLI_ACTOR, tenant.id, id);
      const o = ctx.output(!!p.values.json);
      o.result(a);
      o.text(record(`Bulk action ${a.id}: ${a.status}${a.cancel_requested && a.status === 'running' ? ' (stopping)' : ''}`, {
        action: a.action, total: a.total, done: a.done, changed: a.changed, filter: a.filter, error: a.error_message,
      }));
      return;
    }
    default:
      throw new UsageError(sub ? `unknown bulk command "${sub}"` : 'missing bulk command', BULK_HELP);
  }
}

export const bulkCommand: Command = {
  summary: 'act on every queue item or job that matches a filter (re-drive, retry, delete, stop, …)',
  help: BULK_HELP,
  fields: {
    action: '--action', ids: '--ids', priority: '--priority', postpone: '--postpone', include_business: '--include-business',
    'filter → status': '--status', 'filter → reference': '--reference', 'filter → data': '--data', 'filter → exception_type': '--exception-type',
    'filter → created_after': '--created-after', 'filter → created_before': '--created-before',
    'filter → process_id': '--process', 'filter → machine_id': '--machine', 'filter → input_data': '--input-data', filter: 'filter',
  },
  run: runBulk,
};
