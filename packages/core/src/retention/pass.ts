import { randomUUID } from 'node:crypto';
import type { Queryable, Sql } from '../db/sql';
import type { Logger } from '../logger';
import type { LogArchive } from '../jobs/log-archive';
import { FINAL_JOB_STATUSES } from '../jobs/transitions';
import { archiveKey, hourOf, type RecordArchive } from './archive';

/** Item statuses that have ended: retention may remove them, never the others. */
export const ENDED_ITEM_STATUSES = ['completed', 'failed', 'dead_letter'] as const;
export const RETENTION_ACTIONS = ['delete', 'archive'] as const;
export type RetentionAction = (typeof RETENTION_ACTIONS)[number];

/** Rows one transaction archives and deletes: a batch holds its row locks only this long. */
export const RETENTION_BATCH = 1000;
/**
 * How long a scope's lease lasts past the batch that renewed it, at least: longer than any pause
 * between two batches of a live pass, short enough that a dispatcher that died mid-pass leaves
 * its scopes to the others soon.
 */
export const RETENTION_LEASE_SECONDS = 60;

export interface RetentionOptions {
  logger?: Logger;
  /** where `archive` queues and workspaces write; without it they are skipped (never deleted unarchived) */
  archive?: RecordArchive | null;
  /** the job log archive, to put a job's archived log into its archived row */
  logArchive?: LogArchive;
  /** how long the pass starts new batches (a batch under way finishes) */
  budgetMs?: number;
  /**
   * The share of the pass's wall time its batches may take (0 < d ≤ 1): after a batch that took
   * t ms the pass waits t × (1 − d) / d ms. The pass is background work on the machines that
   * take and settle items; unthrottled, its back-to-back deletes take the CPU the flow needs.
   * 1 (the default here) runs batches back to back; the dispatcher passes RETENTION_DUTY.
   */
  dutyCycle?: number;
  batch?: number;
  /**
   * Who runs the pass (the engine, one per process): a scope's lease taken by this holder is its
   * own to go on with, even after a pass of it failed; another holder's live lease makes the scope
   * busy. Default: a holder of this call alone.
   */
  holder?: string;
  /** tests: called after a batch's archive is durable and before its delete */
  afterArchive?: (tx: Queryable) => void | Promise<void>;
}

export interface RetentionScopeResult {
  kind: 'queue_items' | 'jobs';
  /** the queue, or the tenant for jobs */
  target_id: string;
  deleted: number;
  archived: number;
  /** another dispatcher held this scope, or it waits for an archive */
  skipped?: 'busy' | 'no_archive';
}

export interface Scope {
  kind: 'queue_items' | 'jobs';
  target_id: string;
  tenant_id: string;
  queue_name: string | null;
  action: RetentionAction;
  completed_days: number;
  failed_days: number;
  /** removed by batches of a pass that ended before its event (a kill): told by the next event */
  pending: number;
}

const secs = (days: number) => days * 86_400;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Where a pass's previous batch ended: the next batch starts after it. */
export interface PassCursor {
  /** the last row's end time as Postgres wrote it (microseconds, which a Date would round) */
  endedKey: string;
  id: string;
}

/** `row`: the whole row as JSON, read only when the scope archives (null otherwise) */
type ExpiredRow = { id: string; ended_at: Date; ended_key: string; row: Record<string, unknown> | null };

/**
 * The expired rows of a batch, locked, oldest first (an index range scan on `*_ended_idx`),
 * after `after` when given. A pass starts each batch where the previous one ended instead of at
 * the head of the index: while a long transaction holds vacuum back, the index entries of the
 * rows the pass already deleted stay at that head, and every batch would walk them again. A row
 * the cursor passes over (another transaction held its lock) is taken by the next pass, which
 * starts at the head.
 */
export async function expiredRows(tx: Queryable, s: Scope, limit: number, after: PassCursor | null = null) {
  // a delete needs only the ids: to_jsonb would read (and decompress) every payload for nothing
  const archives = s.action === 'archive';
  if (s.kind === 'queue_items') {
    return tx<ExpiredRow[]>`
      select i.id, i.updated_at as ended_at, i.updated_at::text as ended_key, ${archives
        ? tx`to_jsonb(i) || jsonb_build_object('data', (select p.data from queue_item_payloads p where p.id = i.id))`
        : tx`null::jsonb`} as row from queue_items i
      where i.queue_id = ${s.target_id} and i.status in ('completed', 'failed', 'dead_letter')
        and ${after ? tx`(i.updated_at, i.id) > (${after.endedKey}::timestamptz, ${after.id}::uuid)` : tx`true`}
        and i.updated_at < now() - make_interval(secs => ${secs(Math.min(s.completed_days, s.failed_days))}::float8)
        and i.updated_at < now() - make_interval(secs => case when i.status = 'completed'
              then ${secs(s.completed_days)}::float8 else ${secs(s.failed_days)}::float8 end)
        -- a failed item with a retry left is the retry policy's to move back to new, not ended yet;
        -- a business failure is never retried, so it ended when it failed
        and (i.status <> 'failed' or i.exception_type = 'business'
             or i.retry_count >= (select q.max_retries from queues q where q.id = ${s.target_id}))
      order by i.updated_at, i.id
      limit ${limit}
      for update skip locked`;
  }
  return tx<ExpiredRow[]>`
    select j.id, j.finished_at as ended_at, j.finished_at::text as ended_key, ${archives ? tx`to_jsonb(j)` : tx`null::jsonb`} as row from jobs j
    where j.tenant_id = ${s.target_id} and j.status = any(${FINAL_JOB_STATUSES as string[]}::text[])
      and ${after ? tx`(j.finished_at, j.id) > (${after.endedKey}::timestamptz, ${after.id}::uuid)` : tx`true`}
      and j.finished_at < now() - make_interval(secs => ${secs(s.completed_days)}::float8)
    order by j.finished_at, j.id
    limit ${limit}
    for update skip locked`;
}

/**
 * A scope's retention settings, read in the batch's transaction. A queue's row is locked against
 * a change until the batch commits (only its settings change it); a workspace's is not, since
 * every job started counts its quota there, and a change of its settings applies from the next
 * batch on.
 */
async function settingsNow(tx: Queryable, s: Scope): Promise<Pick<Scope, 'action' | 'completed_days' | 'failed_days'> | null> {
  const [row] = s.kind === 'queue_items'
    ? await tx<Array<Pick<Scope, 'action' | 'completed_days' | 'failed_days'>>>`
        select retention_action as action, retention_completed_days as completed_days, retention_failed_days as failed_days
          from queues where id = ${s.target_id} for share`
    : await tx<Array<Pick<Scope, 'action' | 'completed_days' | 'failed_days'>>>`
        select job_retention_action as action, job_retention_days as completed_days, job_retention_days as failed_days
          from tenants where id = ${s.target_id}`;
  return row ?? null;
}

/**
 * A scope's retention lock, for the transaction: held by the batch that archives and deletes its
 * rows, and by the orphan sweep (sweep.ts) while it checks the scope's files, so neither sees the
 * other between a file's write and its manifest row. False: another transaction holds it.
 */
export async function tryScopeLock(tx: Queryable, kind: Scope['kind'], targetId: string): Promise<boolean> {
  const [lock] = await tx<Array<{ ok: boolean }>>`
    select pg_try_advisory_xact_lock(hashtextextended(${`retention:${kind}:${targetId}`}, 0)) as ok`;
  return lock!.ok;
}

type BatchResult = { deleted: number; archived: number; busy: boolean; cursor: PassCursor | null };

/**
 * Whether another pass holds the scope: its lease is live and is not `holder`'s. Read under the
 * scope's transaction lock, so no other batch of the scope writes a lease meanwhile.
 */
async function leasedToAnother(tx: Queryable, s: Scope, holder: string): Promise<boolean> {
  const [lease] = await tx<Array<{ other: boolean }>>`
    select passing_until > now() and passing_by is distinct from ${holder}::uuid as other
      from retention_progress where kind = ${s.kind} and target_id = ${s.target_id}`;
  return lease?.other === true;
}

/**
 * One batch of a scope, in one transaction: take the scope's transaction lock (another dispatcher
 * holding it means that one runs this scope's pass now: skip), lock the oldest expired rows, write
 * them to the archive and wait until it is durable, record the files in the manifest, delete the
 * rows and add them to the scope's progress. A kill anywhere before the commit leaves every row
 * in place (a file already written is not in the manifest and is overwritten by the re-run of the
 * same rows); after it, the rows are gone and their file is listed.
 */
async function runBatch(sql: Sql, s: Scope, opts: RetentionOptions, lease: { holder: string; seconds: number }, limit: number, after: PassCursor | null): Promise<BatchResult> {
  return sql.begin(async (tx) => {
    if (!(await tryScopeLock(tx, s.kind, s.target_id))) return { deleted: 0, archived: 0, busy: true, cursor: after };
    if (await leasedToAnother(tx, s, lease.holder)) return { deleted: 0, archived: 0, busy: true, cursor: after };
    // the settings as they are now, held until the batch commits: a queue switched from delete
    // to archive during a pass archives from its next batch on, never has a batch deleted unarchived
    const current = await settingsNow(tx, s);
    if (!current || (current.action === 'archive' && !opts.archive)) return { deleted: 0, archived: 0, busy: false, cursor: after };
    s = { ...s, ...current };
    const rows = await expiredRows(tx, s, limit, after);
    if (rows.length === 0) return { deleted: 0, archived: 0, busy: false, cursor: after };
    let archived = 0;
    if (s.action === 'archive') {
      if (s.kind === 'jobs' && opts.logArchive) {
        for (const r of rows) {
          const key = r.row!.logs_archived ? (r.row!.logs_archive_key as string | null) : null;
          if (key) r.row!.logs = await opts.logArchive.get(tx, key);
        }
      }
      type Expired = (typeof rows)[number];
      const byHour = new Map<string, Expired[]>();
      for (const r of rows) {
        const h = hourOf(r.ended_at);
        byHour.set(h, [...(byHour.get(h) ?? []), r]);
      }
      for (const [hour, part] of byHour) {
        const key = archiveKey({ tenantId: s.tenant_id, kind: s.kind, queueId: s.target_id }, hour, part.map((r) => r.id), part[0]!.ended_at);
        const { bytes } = await opts.archive!.put(key, part.map((r) => JSON.stringify(r.row)));
        await tx`
          insert into archive_files (key, tenant_id, kind, queue_id, queue_name, hour, rows, bytes, first_ended_at, last_ended_at)
          values (${key}, ${s.tenant_id}, ${s.kind}, ${s.kind === 'jobs' ? null : s.target_id}, ${s.queue_name}, ${`${hour}:00:00Z`},
                  ${part.length}, ${bytes}, ${part[0]!.ended_at}, ${part[part.length - 1]!.ended_at})
          on conflict (key) do update set rows = excluded.rows, bytes = excluded.bytes, created_at = now()`;
        archived += part.length;
      }
      await opts.afterArchive?.(tx);
    }
    const ids = rows.map((r) => r.id);
    const res = s.kind === 'queue_items'
      ? await tx`delete from queue_items where id = any(${ids}::uuid[])`
      : await tx`delete from jobs where id = any(${ids}::uuid[])`;
    // the batch's progress and the pass's lease, renewed: a scope with nothing to remove writes nothing
    await tx`
      insert into retention_progress (kind, target_id, tenant_id, deleted, archived, passing_by, passing_until)
      values (${s.kind}, ${s.target_id}, ${s.tenant_id}, ${res.count}, ${archived}, ${lease.holder}::uuid,
              now() + make_interval(secs => ${lease.seconds}::float8))
      on conflict (kind, target_id) do update set deleted = retention_progress.deleted + excluded.deleted,
        archived = retention_progress.archived + excluded.archived,
        passing_by = excluded.passing_by, passing_until = excluded.passing_until`;
    const last = rows[rows.length - 1]!;
    return { deleted: res.count, archived, busy: false, cursor: { endedKey: last.ended_key, id: last.id } };
  }) as Promise<BatchResult>;
}

/**
 * The end of a scope's pass: what its batches removed since the last event becomes one event
 * (`queue.retention` or `jobs.retention`), the sum is reset and the holder's lease released, in
 * one transaction.
 */
async function closePass(sql: Sql, s: Scope, holder: string): Promise<void> {
  await sql.begin(async (tx) => {
    const [p] = await tx<Array<{ deleted: string; archived: string }>>`
      select deleted, archived from retention_progress where kind = ${s.kind} and target_id = ${s.target_id} for update`;
    const deleted = Number(p?.deleted ?? 0);
    const archived = Number(p?.archived ?? 0);
    if (deleted > 0) {
      const data = s.kind === 'queue_items'
        ? { queue_id: s.target_id, queue_name: s.queue_name, deleted, archived, action: s.action }
        : { deleted, archived, action: s.action };
      await tx`insert into events (tenant_id, type, data) values (${s.tenant_id}, ${s.kind === 'jobs' ? 'jobs.retention' : 'queue.retention'}, ${tx.json(data)})`;
    }
    await tx`
      insert into retention_progress (kind, target_id, tenant_id, last_pass_at) values (${s.kind}, ${s.target_id}, ${s.tenant_id}, now())
      on conflict (kind, target_id) do update set deleted = 0, archived = 0, last_pass_at = now(),
        passing_by = case when retention_progress.passing_by = ${holder}::uuid then null else retention_progress.passing_by end,
        passing_until = case when retention_progress.passing_by = ${holder}::uuid then null else retention_progress.passing_until end`;
  });
}

/** Every queue and every workspace's jobs, the least recently passed first (the budget rotates). */
async function scopes(sql: Sql): Promise<Scope[]> {
  return sql<Scope[]>`
    select * from (
      select 'queue_items' as kind, q.id as target_id, q.tenant_id, q.name as queue_name, q.retention_action as action,
             q.retention_completed_days as completed_days, q.retention_failed_days as failed_days,
             coalesce(p.deleted, 0)::float8 as pending, p.last_pass_at
        from queues q left join retention_progress p on p.kind = 'queue_items' and p.target_id = q.id
      union all
      select 'jobs', t.id, t.id, null, t.job_retention_action, t.job_retention_days, t.job_retention_days,
             coalesce(p.deleted, 0)::float8, p.last_pass_at
        from tenants t left join retention_progress p on p.kind = 'jobs' and p.target_id = t.id
    ) s order by last_pass_at nulls first, target_id`;
}

/**
 * The dispatcher's retention pass (docs/decisions/retention.md): per queue and per workspace's
 * jobs, batches of expired ended rows are archived (when the scope says so) and deleted until
 * none is left or the budget is spent, then one event per scope tells what went. Returns the
 * scopes it touched.
 */
export async function runRetention(sql: Sql, opts: RetentionOptions = {}): Promise<RetentionScopeResult[]> {
  const started = Date.now();
  const budget = opts.budgetMs ?? 10_000;
  const limit = opts.batch ?? RETENTION_BATCH;
  const duty = opts.dutyCycle ?? 1;
  if (!(duty > 0 && duty <= 1)) throw new Error(`Illegal retention duty cycle ${String(duty)}`);
  const holder = opts.holder ?? randomUUID();
  const out: RetentionScopeResult[] = [];
  let failure: unknown = null;
  for (const s of await scopes(sql)) {
    if (Date.now() - started > budget) break;
    if (s.action === 'archive' && !opts.archive) {
      const due = await sql.begin((tx) => expiredRows(tx, s, 1));
      if ((due as unknown[]).length > 0) {
        opts.logger?.warn('retention waits: the scope archives and no archive is configured (ARCHIVE_DIR or ARCHIVE_S3_BUCKET)', { kind: s.kind, target_id: s.target_id });
        out.push({ kind: s.kind, target_id: s.target_id, deleted: 0, archived: 0, skipped: 'no_archive' });
      }
      continue;
    }
    let deleted = 0;
    let archived = 0;
    let busy = false;
    let cursor: PassCursor | null = null;
    // the lease outlasts two of the pass's batch-and-pause cycles as the last one went
    let cycleMs = 0;
    try {
      for (;;) {
        const batchStarted = Date.now();
        const seconds = Math.max(RETENTION_LEASE_SECONDS, (2 * cycleMs) / 1000);
        const r = await runBatch(sql, s, opts, { holder, seconds }, limit, cursor);
        if (r.busy) { busy = true; break; }
        cursor = r.cursor;
        cycleMs = (Date.now() - batchStarted) / duty;
        if (duty < 1 && r.deleted > 0) await sleep(((Date.now() - batchStarted) * (1 - duty)) / duty);
        deleted += r.deleted;
        archived += r.archived;
        if (r.deleted < limit || Date.now() - started > budget) break;
      }
    } catch (err) {
      // one scope that fails (an archive that refuses writes) must not stop the others; the pass
      // still fails, after them, so the tick is seen failing
      opts.logger?.warn('retention batch failed; it is retried next tick', { kind: s.kind, target_id: s.target_id, err: (err as Error).message });
      failure ??= err;
      continue;
    }
    if (busy) {
      out.push({ kind: s.kind, target_id: s.target_id, deleted: 0, archived: 0, skipped: 'busy' });
      continue;
    }
    // a scope with nothing to do writes nothing
    if (deleted > 0 || s.pending > 0) await closePass(sql, s, holder);
    if (deleted > 0) {
      out.push({ kind: s.kind, target_id: s.target_id, deleted, archived });
      opts.logger?.info('retention pass', { kind: s.kind, target_id: s.target_id, deleted, archived });
    }
  }
  if (failure) throw failure;
  return out;
}
