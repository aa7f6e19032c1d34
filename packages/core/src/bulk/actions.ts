import type { Queryable, Sql } from '../db/sql';
import type { Logger } from '../logger';
import { ConflictError, NotFoundError, ValidationError } from '../errors';
import { recordAudit } from '../audit/audit';
import type { AuditActor } from '../audit/catalog-changes';
import { tenantHasProcessAndMachine } from '../jobs/repo';
import { CONTAINMENT_FILTER_MAX_LENGTH } from '../validation/containment-filter';
import { assertJsonInput } from '../validation/json-input';
import { storableDate } from '../validation/formats';
import { es } from '../messages/server-messages';
import { countInScope, nextChunk, type BulkScope } from './matching';
import { applyItemChunk, applyJobChunk } from './steps';
import { BULK_ACTION_STATUS_TRANSITIONS as T, bulkActionStatusInSql, bulkActionStatusSql } from './transitions';
import {
  BULK_ACTION_CHUNK, type BulkActionResponse, type BulkActionStatus, type ItemActionBody, type ItemActionName, type JobActionBody, type JobActionName,
} from './schemas';

/**
 * Bulk actions by filter (docs/decisions/bulk-actions.md). Asking for one counts the rows it
 * covers and records it with one audit row; its chunks then commit one by one, each with the
 * cursor's advance, so a crash leaves every row done or untouched and the action resumes from its
 * cursor. A small action runs at once in the asking request; a larger one runs in the dispatcher.
 */
export interface BulkActionRow {
  id: string;
  tenant_id: string;
  target: 'queue_items' | 'jobs';
  queue_id: string | null;
  action: string;
  params: { priority?: number; postpone?: string | null; include_business?: boolean };
  filter: Record<string, unknown> | null;
  ids: string[] | null;
  status: BulkActionStatus;
  total: number;
  done: number;
  changed: number;
  snapshot_at: Date;
  cursor_created_at: string | null;
  cursor_id: string | null;
  cancel_requested: boolean;
  error_message: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

const COLUMNS = `id, tenant_id, target, queue_id, action, params, filter, ids, status, total, done, changed, snapshot_at,
  cursor_created_at::text as cursor_created_at, cursor_id, cancel_requested, error_message, created_at, updated_at, finished_at`;

export function toBulkActionResponse(r: BulkActionRow): BulkActionResponse {
  return {
    id: r.id, target: r.target, queue_id: r.queue_id, action: r.action, status: r.status,
    total: r.total, done: r.done, changed: r.changed, filter: r.filter, ids_count: r.ids ? r.ids.length : null, params: r.params,
    cancel_requested: r.cancel_requested, error_message: r.error_message,
    created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString(), finished_at: r.finished_at ? r.finished_at.toISOString() : null,
  };
}

/**
 * `inlineToken`: the asker said it runs a small action itself (AskOptions.runHere), the action is
 * small enough, and it was created leased to the asker (runAskedAction takes the token): no
 * background runner takes it meanwhile, and if the asker dies the lease lapses and the
 * dispatcher's pass resumes it.
 */
export type BulkAsk = { dryRun: true; total: number } | { dryRun: false; action: BulkActionRow; inlineToken: string | null };

function bodyError(field: string, message: string, type = 'value_error'): ValidationError {
  return ValidationError.single(['body', field], message, type);
}

/** The rules the body's schema cannot say: a filter or ids, the fields each action needs, the filter's size. */
function checkCommon(body: { filter?: object; ids?: string[] }): void {
  if (body.filter !== undefined && body.ids !== undefined) throw bodyError('ids', es.bulk.filterOrIds);
  // what Postgres cannot hold (U+0000, lone surrogates) or nesting past the bound, whoever asks (the CLI too)
  if (body.filter !== undefined) assertJsonInput(body.filter, ['body', 'filter']);
  const f = body.filter as { created_after?: string; created_before?: string } | undefined;
  storableDate(f?.created_after, ['body', 'filter', 'created_after']);
  storableDate(f?.created_before, ['body', 'filter', 'created_before']);
  if (f?.created_after !== undefined && f.created_before !== undefined && Date.parse(f.created_after) >= Date.parse(f.created_before)) {
    throw ValidationError.single(['body', 'filter', 'created_after'], es.bulk.createdRange);
  }
  if (body.filter !== undefined && JSON.stringify(body.filter).length > CONTAINMENT_FILTER_MAX_LENGTH) {
    throw bodyError('filter', es.bulk.filterTooLarge(CONTAINMENT_FILTER_MAX_LENGTH));
  }
}

/**
 * `include_business`: only a retry re-runs business failures, and only when asked; a retry whose
 * filter names business failures without asking would change nothing, which is refused rather than
 * answered with a total of 0.
 */
function businessParams(body: { action: string; include_business?: boolean; filter?: object }): BulkActionRow['params'] {
  if (body.include_business !== undefined && body.action !== 'retry') throw bodyError('include_business', es.bulk.notForAction(body.action));
  const kind = (body.filter as { exception_type?: unknown } | undefined)?.exception_type;
  if (body.action === 'retry' && kind === 'business' && body.include_business !== true) {
    throw ValidationError.single(['body', 'filter', 'exception_type'], es.bulk.businessNeedsInclude);
  }
  return body.include_business === true ? { include_business: true } : {};
}

function itemParams(body: ItemActionBody): BulkActionRow['params'] {
  const action: ItemActionName = body.action;
  const business = businessParams(body);
  if (action === 'retry') return business;
  if (body.priority !== undefined && action !== 'set_priority') throw bodyError('priority', es.bulk.notForAction(action));
  if (body.postpone !== undefined && action !== 'postpone') throw bodyError('postpone', es.bulk.notForAction(action));
  if (action === 'set_priority') {
    if (body.priority === undefined) throw bodyError('priority', es.bulk.priorityRequired, 'missing');
    return { priority: body.priority };
  }
  if (action === 'postpone') {
    if (body.postpone === undefined) throw bodyError('postpone', es.bulk.postponeRequired, 'missing');
    return { postpone: storableDate(body.postpone, ['body', 'postpone']) };
  }
  return {};
}

export interface AskOptions {
  /** the asker runs an action of up to one chunk itself, at once (the API's request) */
  runHere?: boolean;
}

async function ask(sql: Sql, actor: AuditActor, scope: BulkScope, params: BulkActionRow['params'], dryRun: boolean, opts: AskOptions): Promise<BulkAsk> {
  if (dryRun) return { dryRun: true, total: await countInScope(sql, { ...scope, snapshotAt: null }) };
  const created = await sql.begin(async (tx) => {
    const [{ now }] = await tx<Array<{ now: Date }>>`select now()`;
    const total = await countInScope(tx, { ...scope, snapshotAt: now });
    // a small action is the asker's to run, leased from the start: the dispatcher's pass, which
    // takes pending actions, would otherwise take it between this commit and the asker's claim,
    // and the answer would say running for an action the contract says ends within the request
    const inline = opts.runHere === true && total > 0 && total <= BULK_ACTION_CHUNK;
    const [row] = await tx<Array<BulkActionRow & { lease_token: string | null }>>`
      insert into bulk_actions (tenant_id, target, queue_id, action, params, filter, ids, total, snapshot_at, created_by, status, finished_at,
                                lease_token, lease_until)
      values (${scope.tenantId}, ${scope.target}, ${scope.queueId}, ${scope.action}, ${tx.json(params as never)},
              ${scope.filter ? tx.json(scope.filter as never) : null}, ${scope.ids as string[] | null}, ${total}, ${now},
              ${tx.json({ actor_type: actor.actorType, actor_id: actor.actorId ?? null, source: actor.source } as never)},
              ${total === 0 ? 'completed' : inline ? 'running' : 'pending'}, ${total === 0 ? now : null},
              ${inline ? tx`gen_random_uuid()` : null}, ${inline ? tx`now() + make_interval(secs => ${LEASE_SECONDS})` : null})
      returning ${tx.unsafe(COLUMNS)}, lease_token`;
    const { lease_token: token, ...action } = row!;
    await recordAudit(tx, {
      ...actor,
      tenantId: scope.tenantId,
      action: scope.target === 'jobs' ? 'bulk_jobs' : 'bulk_queue_items',
      resourceType: 'bulk_action',
      resourceId: action.id,
      details: { action: scope.action, queue_id: scope.queueId, filter: scope.filter, ids_count: scope.ids?.length ?? null, params, total },
    });
    return { action, token };
  });
  return { dryRun: false, action: created.action, inlineToken: created.token };
}

/** Asks for an action on a queue's items (the queue already resolved in the tenant). */
export async function askItemAction(
  sql: Sql, actor: AuditActor, queue: { id: string; tenant_id: string }, body: ItemActionBody, opts: AskOptions = {},
): Promise<BulkAsk> {
  checkCommon(body);
  const params = itemParams(body);
  const scope: BulkScope = {
    tenantId: queue.tenant_id, queueId: queue.id, target: 'queue_items', action: body.action,
    filter: body.ids ? null : (body.filter ?? {}), ids: body.ids ?? null, snapshotAt: null, includeBusiness: params.include_business === true,
  };
  return ask(sql, actor, scope, params, body.dry_run === true, opts);
}

/** Asks for an action on a tenant's jobs. */
export async function askJobAction(sql: Sql, actor: AuditActor, tenantId: string, body: JobActionBody, opts: AskOptions = {}): Promise<BulkAsk> {
  checkCommon(body);
  const f = body.filter;
  if (f?.process_id !== undefined || f?.machine_id !== undefined) {
    const known = await tenantHasProcessAndMachine(sql, tenantId, f.process_id ?? null, f.machine_id ?? null);
    if (f.process_id !== undefined && !known.process) throw ValidationError.single(['body', 'filter', 'process_id'], es.jobs.notAProcessOfWorkspace, 'unknown_id');
    if (f.machine_id !== undefined && !known.machine) throw ValidationError.single(['body', 'filter', 'machine_id'], es.jobs.notAMachineOfWorkspace, 'unknown_id');
  }
  const params = businessParams(body);
  const scope: BulkScope = {
    tenantId, queueId: null, target: 'jobs', action: body.action, filter: body.ids ? null : (f ?? {}), ids: body.ids ?? null, snapshotAt: null,
    includeBusiness: params.include_business === true,
  };
  return ask(sql, actor, scope, params, body.dry_run === true, opts);
}

/** `target`: only an action on those (an API key reads actions on queue items only). */
export async function getBulkAction(sql: Queryable, tenantId: string, id: string, target?: BulkActionRow['target']): Promise<BulkActionRow> {
  const [row] = await sql<BulkActionRow[]>`
    select ${sql.unsafe(COLUMNS)} from bulk_actions where id = ${id} and tenant_id = ${tenantId} ${target ? sql`and target = ${target}` : sql``}`;
  if (!row) throw new NotFoundError(es.bulk.notFound);
  return row;
}

/**
 * Asks a running action to stop: it ends `cancelled` before its next chunk (a pending one at
 * once). What its committed chunks did stays done. 409 for an action that already ended.
 */
export async function cancelBulkAction(sql: Sql, actor: AuditActor, tenantId: string, id: string, target?: BulkActionRow['target']): Promise<BulkActionRow> {
  return sql.begin(async (tx) => {
    const [current] = await tx<BulkActionRow[]>`
      select ${tx.unsafe(COLUMNS)} from bulk_actions
      where id = ${id} and tenant_id = ${tenantId} ${target ? tx`and target = ${target}` : tx``} for update`;
    if (!current) throw new NotFoundError(es.bulk.notFound);
    if (current.status === 'completed' || current.status === 'cancelled') throw new ConflictError(es.bulk.alreadyEnded(current.status), { status: current.status });
    const [row] = await tx<BulkActionRow[]>`
      update bulk_actions set cancel_requested = true, updated_at = now(),
             status = case when ${bulkActionStatusInSql(tx, 'status', T.cancelPending.from)} then ${bulkActionStatusSql(tx, T.cancelPending.to)} else status end,
             finished_at = case when ${bulkActionStatusInSql(tx, 'status', T.cancelPending.from)} then now() else finished_at end
      where id = ${id}
      returning ${tx.unsafe(COLUMNS)}`;
    await recordAudit(tx, {
      ...actor, tenantId, action: 'cancel_bulk_action', resourceType: 'bulk_action', resourceId: id, details: { done: current.done, total: current.total },
    });
    return row!;
  });
}

/** How long a runner holds an action between chunks before another may take it over. */
const LEASE_SECONDS = 60;

type ChunkOutcome = 'more' | 'finished' | 'lost';

async function runChunk(sql: Sql, id: string, token: string): Promise<ChunkOutcome> {
  return sql.begin(async (tx) => {
    const [a] = await tx<BulkActionRow[]>`
      select ${tx.unsafe(COLUMNS)} from bulk_actions where id = ${id} and lease_token = ${token} and ${bulkActionStatusInSql(tx, 'status', T.cancel.from)} for update`;
    if (!a) return 'lost';
    if (a.cancel_requested) {
      await tx`update bulk_actions set status = ${bulkActionStatusSql(tx, T.cancel.to)}, finished_at = now(), lease_until = null, lease_token = null, updated_at = now() where id = ${id}`;
      return 'finished';
    }
    const scope: BulkScope = {
      tenantId: a.tenant_id, queueId: a.queue_id, target: a.target, action: a.action, filter: a.filter, ids: a.ids, snapshotAt: a.snapshot_at,
      includeBusiness: a.params.include_business === true,
    };
    const cursor = a.cursor_created_at && a.cursor_id ? { createdAt: a.cursor_created_at, id: a.cursor_id } : null;
    const rows = await nextChunk(tx, scope, cursor, BULK_ACTION_CHUNK);
    const ids = rows.map((r) => r.id);
    const ctx = { tenantId: a.tenant_id, queueId: a.queue_id, params: a.params };
    const changed = ids.length === 0 ? 0
      : a.target === 'jobs' ? await applyJobChunk(tx, a.action as JobActionName, ctx, ids) : await applyItemChunk(tx, a.action as ItemActionName, ctx, ids);
    const last = rows.at(-1);
    const finished = rows.length < BULK_ACTION_CHUNK;
    await tx`
      update bulk_actions set done = done + ${rows.length}, changed = changed + ${changed},
             -- a row of a transaction that committed after the count is in the snapshot but was not counted
             total = greatest(total, done + ${rows.length}),
             cursor_created_at = coalesce(${last?.cursor_at ?? null}::timestamptz, cursor_created_at),
             cursor_id = coalesce(${last?.id ?? null}::uuid, cursor_id),
             status = ${finished ? T.complete.to : T.renew.to}, finished_at = ${finished ? tx`now()` : null},
             lease_until = ${finished ? null : tx`now() + make_interval(secs => ${LEASE_SECONDS})`},
             lease_token = ${finished ? null : token}, error_message = null, updated_at = now()
      where id = ${id}`;
    return finished ? 'finished' : 'more';
  });
}

/**
 * Takes an open action whose lease is free or lapsed (one named, or the oldest) and fences it
 * with a fresh token. Null when there is none to take.
 */
async function claim(sql: Sql, id: string | null): Promise<{ id: string; token: string } | null> {
  const [row] = await sql<Array<{ id: string; token: string }>>`
    update bulk_actions set status = ${bulkActionStatusSql(sql, T.claim.to)}, lease_token = gen_random_uuid(),
           lease_until = now() + make_interval(secs => ${LEASE_SECONDS}), updated_at = now()
    where id = (
      select id from bulk_actions
      where ${bulkActionStatusInSql(sql, 'status', T.claim.from)} and (lease_until is null or lease_until < now())
        ${id ? sql`and id = ${id}` : sql``}
      order by created_at
      limit 1
      for update skip locked)
    returning id, lease_token as token`;
  return row ?? null;
}

async function release(sql: Sql, id: string, token: string): Promise<void> {
  await sql`update bulk_actions set lease_until = null, lease_token = null where id = ${id} and lease_token = ${token}`;
}

export interface RunBulkOptions {
  /** only this action (the asking request runs a small one at once) */
  actionId?: string;
  /** stop taking chunks after this long, leaving the rest to the next pass */
  budgetMs?: number;
  logger?: Logger;
}

/**
 * Runs an action the asker holds (BulkAsk.inlineToken) to its end, within the request. A chunk
 * that fails is recorded as runBulkActions records it, the lease left to lapse so that the
 * dispatcher's pass resumes the action.
 */
export async function runAskedAction(sql: Sql, id: string, token: string, logger?: Logger): Promise<void> {
  try {
    while ((await runChunk(sql, id, token)) === 'more');
  } catch (err) {
    await chunkFailed(sql, id, token, err, logger);
  }
}

async function chunkFailed(sql: Sql, id: string, token: string, err: unknown, logger?: Logger): Promise<void> {
  logger?.warn('bulk action chunk failed; it resumes once its lease lapses', { bulk_action_id: id, err: (err as Error).message });
  await sql`update bulk_actions set error_message = ${es.bulk.interrupted}, updated_at = now() where id = ${id} and lease_token = ${token}`
    .catch(() => undefined);
}

/**
 * Runs open actions chunk by chunk until they end or the budget is spent; an action not finished
 * is released for the next pass (any replica's). A chunk that fails rolls back whole: its error
 * is recorded, and the action is left leased so that the next try waits for the lease to lapse.
 * Returns how many chunks committed.
 */
export async function runBulkActions(sql: Sql, opts: RunBulkOptions = {}): Promise<number> {
  const until = Date.now() + (opts.budgetMs ?? 5000);
  let chunks = 0;
  for (;;) {
    const held = await claim(sql, opts.actionId ?? null);
    if (!held) return chunks;
    let outcome: ChunkOutcome = 'more';
    try {
      // at least one chunk per action taken, however small the budget
      do {
        outcome = await runChunk(sql, held.id, held.token);
        if (outcome !== 'lost') chunks++;
      } while (outcome === 'more' && Date.now() < until);
    } catch (err) {
      await chunkFailed(sql, held.id, held.token, err, opts.logger);
      return chunks;
    }
    if (outcome === 'more') {
      await release(sql, held.id, held.token);
      return chunks;
    }
    if (opts.actionId || Date.now() >= until) return chunks;
  }
}
