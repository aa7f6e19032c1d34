import { createBullDispatch, type Sql } from '@svc/core';
import {
  countInScope, nextChunk,
  addItem, addItemsBulk, appendJobLogs, applyItemRetryPolicy, archiveJobLogs, pgLogArchive, readJobLogs,
  createApiKey, deactivateApiKey, deactivateUserRow, failItemsOfJobs, failOrphanedItems, findAccessTokenByHash,
  findApiKey, findApiKeyByHash, findIdempotencyKey, findJobWithNames, findMachineByKey, findRunEndedAs,
  findUserByEmail, finishJob, getActiveQueueByName, getSession, getTenantQueue, giveUpMachineJobs, listApiKeyRows,
  listItems, listJobs, listMachines, listProcesses, listQueues, loadQueueItemCounts, listMachineNames, markSlaBreaches,
  pendingStops, readAssetWithKey, pickMachineForFollowUp, queuesNeedingConsumers, readAssetValue, recordAudit,
  recordGoodbye, recordHeartbeat, reconcilePendingJobs, redriveDeadLetterItems, releaseLostClaim, releaseQueueItems,
  releaseUnknownClaims, renewJobLeases, replaceApiKeySecret, reportJobProgress, requestRunningJobStop,
  recomputeClaimFloors, reviewQueueItem, revokeAccessToken, runIdempotent, settleAndClaimItems, sha256, startJob, startQueueConsumers,
  stopJob, sweepExpiredIdempotencyKeys, sweepOfflineMachines, timeOutJobs, touchApiKeys, transitionJob,
  triggerJobByApi, triggerJobByWebhook, expiredRows, type Queryable,
} from '@svc/core/internals';
import { createTestContext, type TestContext } from '@svc/testing';

/**
 * Every statement the API runs per request, and the hot statements of the dispatcher and the
 * agents, use an index and never scan a large table (docs/decisions/indexes.md).
 *
 * How: a realistic data set (200k queue items, 50k jobs, thousands of keys and tokens, 100k
 * audit rows, 60k idempotency keys) is loaded and vacuum-analyzed; then each probe calls the real
 * repository or service function while postgres.js's `debug` hook records the statements it
 * sends (text and parameters). So the statements checked here are exactly what the code sends:
 * when a function's SQL changes, this test checks the new SQL. Each recorded statement is then
 * PREPAREd and EXPLAINed twice: its custom plan (planned with the values, what postgres.js's named
 * prepared statements run first) and the plan it settles on (the generic plan when Postgres would
 * switch to it, see settledPlan). Neither may contain a `Seq Scan` on a large table, except the
 * few KNOWN_SCANS whose fix is in their SQL. Each probe also names the indexes it must use, which
 * documents (and pins) the query → index map.
 */

const LARGE_TABLES = new Set(['queue_items', 'queue_item_payloads', 'jobs', 'api_keys', 'audit_log', 'idempotency_keys', 'access_tokens']);

const squash = (s: string) => s.replace(/\s+/g, ' ');

// ---------------------------------------------------------------------------------------------
// The data set, skewed like production: 200 workspaces, four of which hold nearly all the work;
// one queue holds 150k of the 200k items. Rows are written in creation order and age like real
// ones: old items are finished (completed, some dead_letter or pending_review) and the newest 15%
// wait (new) or run, so a sequential scan looking for ready items reads the whole history first;
// nearly all jobs are finished and the newest few are pending or running.

const SEED = `
select setseed(0.42);
-- 200 workspaces: four big ones (n <= 4) hold nearly all work, the rest a little of everything
insert into tenants (name) select 'idx-tenant-' || lpad(g::text, 3, '0') from generate_series(1, 200) g;
create temp table tn as select id, row_number() over (order by name)::int as n from tenants;
insert into users (tenant_id, email, name, password_hash, role)
select t.id, 'u' || t.n || '-' || g || '@idx.test', 'U', 'scrypt$x', case when g % 5 = 1 then 'admin' else 'member' end
from tn t cross join lateral generate_series(1, case when t.n <= 4 then 100 else 5 end) g;
insert into access_tokens (tenant_id, user_id, token_hash, prefix, expires_at, revoked_at, created_at)
select u.tenant_id, u.id, sha256(convert_to(u.id::text || '-' || g, 'utf8')), 'svc_at_' || substr(md5(u.id::text || g), 1, 5),
       now() + interval '1 day' - g * interval '1 hour', case when g % 7 = 0 then now() end, now() - g * interval '1 hour'
from users u, generate_series(1, 20) g;
insert into folders (tenant_id, name) select t.id, 'folder-' || g from tn t cross join lateral generate_series(1, case when t.n <= 4 then 20 else 3 end) g;
insert into processes (tenant_id, name, folder_id, is_active, sla_deadline_minutes, auto_retry, max_retries)
select t.id, 'process-' || g, f.id, g % 10 <> 0, case when g % 4 = 0 then 30 end, g % 3 = 0 or g = 2, 2
from tn t cross join lateral generate_series(1, case when t.n <= 4 then 200 else 10 end) g
join folders f on f.tenant_id = t.id and f.name = 'folder-' || (g % case when t.n <= 4 then 20 else 3 end + 1);
update processes p set on_success_trigger_process_id = n.id from processes n
where n.tenant_id = p.tenant_id and p.name = 'process-2' and n.name = 'process-3';
insert into machines (tenant_id, name, machine_key_hash, machine_key_prefix, slots, is_active, status, last_heartbeat_at)
select t.id, 'machine-' || g, sha256(convert_to(t.id::text || 'm' || g, 'utf8')), 'svc_mk_x', 1 + g % 4, g % 15 <> 0,
       (array['online', 'busy', 'offline', 'offline'])[1 + g % 4], case when g % 4 < 2 then now() end
from tn t cross join lateral generate_series(1, case when t.n <= 4 then 40 else 8 end) g;
insert into queues (tenant_id, name, consumer_process_id, max_consumers)
select t.id, 'queue-' || g, p.id, 4
from tn t cross join lateral generate_series(1, case when t.n <= 4 then 10 else 4 end) g join processes p on p.tenant_id = t.id and p.name = 'process-1';
insert into assets (tenant_id, name, type) select t.id, 'asset-' || g, 'text' from tn t, generate_series(1, 10) g;
insert into asset_values (asset_id, environment, value) select a.id, e, to_jsonb(a.name) from assets a, unnest(array['dev', 'production']) e;
-- 200k items in creation order: the oldest are finished, the newest 15% wait (status new) or run
create temp table qk as select q.id, q.tenant_id, row_number() over (order by t.n, q.name)::int - 1 as k from queues q join tn t on t.id = q.tenant_id;
create temp table seed_items as
select gen_random_uuid() as id, s.g, q.tenant_id, q.id as queue_id,
       case when g > 170000 then (case when r < 0.01 then 'in_progress' when r < 0.02 then 'pending_review' when r < 0.03 then 'failed' else 'new' end)
            else (case when r < 0.01 then 'dead_letter' when r < 0.015 then 'pending_review' else 'completed' end) end as status,
       1 + g % 5 as priority, case when g % 10 = 0 then 'ref-' || g end as reference,
       case when g % 7 = 0 then now() + (g % 1000) * interval '1 minute' end as deadline,
       case when g % 50 = 0 and g > 170000 then now() + interval '1 hour' end as postpone,
       jsonb_build_object('n', g) as data, case when g > 170000 and r >= 0.02 and r < 0.03 then 1 else 0 end as retry_count,
       case when g > 170000 and r < 0.01 then gen_random_uuid() end as job_id, 1 as attempt,
       -- half the failures business ones, the rest (and every dead letter) application ones
       case when g > 170000 and r >= 0.02 and r < 0.03 then (array['business', 'application'])[1 + g % 2]
            when g <= 170000 and r < 0.01 then 'application' end as exception_type,
       now() - (200000 - g) * interval '1 second' as created_at
from (select g, random() as r, case when g % 4 <> 0 then 0 when g % 8 = 4 then 1 + g % 39 else 40 + g % (select count(*)::int - 40 from qk) end as k
      from generate_series(1, 200000) g) s
join qk q on q.k = s.k;
-- an item's state and its payload (migration 0029), each table written in creation order
insert into queue_items (id, tenant_id, queue_id, status, priority, reference, deadline, postpone, retry_count, job_id, attempt, created_at, exception_type)
select id, tenant_id, queue_id, status, priority, reference, deadline, postpone, retry_count, job_id, attempt, created_at, exception_type from seed_items order by g;
insert into queue_item_payloads (id, queue_id, data) select id, queue_id, data from seed_items order by g;
-- 50k jobs in creation order: nearly all finished; the newest are pending or running
create temp table mk as select m.id, m.tenant_id, t.n, substr(m.name, 9)::int as k from machines m join tn t on t.id = m.tenant_id;
create temp table pk as select p.id, p.tenant_id, substr(p.name, 9)::int as k from processes p;
insert into jobs (tenant_id, process_id, machine_id, status, priority, source, queue_id, sla_due_at, not_before, timeout_at,
                  stop_requested, started_at, finished_at, attempt, created_at)
select m.tenant_id, p.id, m.id, st, 1 + g % 5, (array['api', 'webhook', 'queue', 'retry', 'chain'])[1 + g % 5],
       case when g % 5 = 2 then q.id end,
       case when g % 4 = 0 then now() - interval '2 hours' + (g - 49000) * interval '10 seconds' end,
       case when st = 'pending' and g % 5 = 0 then now() + interval '1 minute' end,
       case when st = 'running' then now() + interval '1 hour' end,
       st = 'running' and g % 30 = 1,
       case when st <> 'pending' then now() - (50000 - g) * interval '10 seconds' end,
       case when st not in ('pending', 'running') then now() - (50000 - g) * interval '10 seconds' end, 1,
       now() - (50000 - g) * interval '10 seconds'
from (select g, case when g % 7 < 4 then 1 + g % 4 else 5 + g % 196 end as tn,
             case when g > 49700 and g % 3 = 0 then 'pending' when g > 49700 and g % 3 = 1 then 'running'
                  else (array['completed', 'completed', 'completed', 'failed', 'stopped', 'timed_out'])[1 + g % 6] end as st
      from generate_series(1, 50000) g) s
join tn t on t.n = s.tn
join mk m on m.n = s.tn and m.k = 1 + (s.g / 7) % case when s.tn <= 4 then 40 else 8 end
join pk p on p.tenant_id = m.tenant_id and p.k = 1 + (s.g / 7) % case when s.tn <= 4 then 200 else 10 end
join (select distinct on (tenant_id) tenant_id, id from qk order by tenant_id, k) q on q.tenant_id = m.tenant_id
order by s.g;
insert into api_keys (tenant_id, name, prefix, key_hash, scopes, is_active, created_at)
select t.id, 'key-' || t.n || '-' || g, 'svc_ak_' || substr(md5(t.n || '-' || g), 1, 5), sha256(convert_to('key-' || t.n || '-' || g, 'utf8')),
       '{queues:read}', g % 10 <> 0, now() - g * interval '1 minute'
from tn t cross join lateral generate_series(1, case when t.n <= 4 then 500 else 20 end) g;
insert into audit_log (tenant_id, actor_type, action, source, resource_type, resource_id, created_at)
select t.id, 'api_key', (array['trigger_job', 'create_api_key', 'read_credential'])[1 + g % 3], 'api', 'job', gen_random_uuid(),
       now() - (100000 - g) * interval '1 second'
from generate_series(1, 100000) g join tn t on t.n = case when g % 5 = 0 then 5 + g % 196 else 1 + g % 4 end;
insert into idempotency_keys (tenant_id, scope, key, request_hash, status, response, created_at)
select t.id, 'queue-items.add', 'idem-' || g, sha256(convert_to(g::text, 'utf8')), 201, '{}'::json, now() - (60000 - g) * interval '2 seconds'
from generate_series(1, 60000) g join tn t on t.n = case when g % 5 = 0 then 5 + g % 196 else 1 + g % 4 end;
`;

interface Fixture {
  tenant: string;
  queue: { id: string; tenant_id: string; name: string };
  /** a queue with ready items and no consumer yet */
  idleQueue: string;
  folder: string;
  process: string;
  onlineMachine: string;
  offlineMachine: string;
  machineKey: string;
  user: { id: string; tokenId: string; tokenHash: Buffer; email: string };
  apiKeyIds: string[];
  pendingJobs: string[];
  /** running jobs of the big tenant on machines that are not offline: [chain, retry, consumer, spare] */
  runningJobs: Array<{ id: string; machine_id: string }>;
  consumerItems: Array<{ id: string; attempt: number }>;
  reviewItems: string[];
  deadItems: string[];
  /** the data of one finished item of `queue`: a search by payload that finds it */
  itemData: Record<string, unknown>;
}

async function loadDataSet(sql: Sql): Promise<Fixture> {
  const conn = await sql.reserve();
  try {
    // Foreign-key checks cost more than the rows themselves; skip them while loading when the
    // role may (the rows are consistent by construction). The item counters' trigger is skipped
    // with them, so the counters are then filled in once; so are the queues' default triggers
    // (migration 0011), which their consumer jobs carry.
    const fast = await conn.unsafe('set session_replication_role = replica').then(() => true, () => false);
    await conn.unsafe(SEED);
    if (fast) {
      await conn.unsafe(`reset session_replication_role;
        insert into queue_item_counts (queue_id, status, shard, n) select queue_id, status, 0, count(*) from queue_items group by 1, 2;
        insert into triggers (tenant_id, queue_id, process_id, max_concurrent_jobs, is_queue_default)
          select tenant_id, id, consumer_process_id, max_consumers, true from queues where consumer_process_id is not null`);
    }
    await conn.unsafe(`update jobs j set trigger_id = t.id from triggers t
      where t.is_queue_default and t.queue_id = j.queue_id and j.source = 'queue' and j.trigger_id is null`);
    // the scenarios below need: a running consumer job holding items, and a chain + retry process
    const [t1] = await conn<Array<{ id: string }>>`select id from tenants where name = 'idx-tenant-001'`;
    const running = await conn<Array<{ id: string; machine_id: string }>>`
      select j.id, j.machine_id from jobs j join machines m on m.id = j.machine_id
      where j.tenant_id = ${t1!.id} and j.status = 'running' and m.status <> 'offline' and m.is_active and not j.stop_requested
      order by j.created_at limit 4`;
    const [queue] = await conn<Array<{ id: string; tenant_id: string; name: string }>>`
      select id, tenant_id, name from queues where tenant_id = ${t1!.id} and name = 'queue-1'`;
    const consumer = running[2]!;
    await conn`update jobs set source = 'queue', queue_id = ${queue!.id},
                 trigger_id = (select id from triggers where queue_id = ${queue!.id} and is_queue_default) where id = ${consumer.id}`;
    // process-2 retries automatically and chains to process-3
    await conn`
      update jobs set process_id = (select id from processes where tenant_id = ${t1!.id} and name = 'process-2')
      where id in ${conn([running[0]!.id, running[1]!.id])}`;
    const consumerItems = await conn<Array<{ id: string; attempt: number }>>`
      update queue_items set job_id = ${consumer.id}
      where id in (select id from queue_items where queue_id = ${queue!.id} and status = 'in_progress' limit 5)
      returning id, attempt`;
    // autovacuum has long run on tables this old: statistics and the visibility map are fresh
    await conn.unsafe('vacuum analyze');

    const [f] = await conn<Array<Record<string, string>>>`
      select (select id from folders where tenant_id = ${t1!.id} and name = 'folder-3') as folder,
             (select id from queues where tenant_id = ${t1!.id} and name = 'queue-2') as idle_queue,
             (select id from processes where tenant_id = ${t1!.id} and name = 'process-5') as process,
             (select id from machines where tenant_id = ${t1!.id} and status = 'online' and is_active order by name limit 1) as online,
             (select id from machines where tenant_id = ${t1!.id} and status = 'offline' and is_active order by name limit 1) as offline`;
    const [user] = await conn<Array<{ id: string; email: string; token_id: string; token_hash: Buffer }>>`
      select u.id, u.email, t.id as token_id, t.token_hash from users u join access_tokens t on t.user_id = u.id
      where u.tenant_id = ${t1!.id} and u.role = 'admin' and t.revoked_at is null order by u.email, t.created_at desc limit 1`;
    const keys = await conn<Array<{ id: string }>>`select id from api_keys where tenant_id = ${t1!.id} and is_active order by name limit 5`;
    const pending = await conn<Array<{ id: string }>>`
      select j.id from jobs j where j.tenant_id = ${t1!.id} and j.status = 'pending' and j.not_before is null order by j.created_at limit 3`;
    const review = await conn<Array<{ id: string }>>`
      select id from queue_items where queue_id = ${queue!.id} and status = 'pending_review' order by created_at limit 2`;
    const dead = await conn<Array<{ id: string }>>`
      select id from queue_items where queue_id = ${queue!.id} and status = 'dead_letter' order by created_at limit 3`;
    const [found] = await conn<Array<{ data: Record<string, unknown> }>>`
      select data from queue_item_records where queue_id = ${queue!.id} and status = 'completed' order by created_at limit 1`;
    return {
      itemData: found!.data,
      tenant: t1!.id,
      queue: queue!,
      idleQueue: f!.idle_queue!,
      folder: f!.folder!,
      process: f!.process!,
      onlineMachine: f!.online!,
      offlineMachine: f!.offline!,
      machineKey: `${t1!.id}m1`,
      user: { id: user!.id, email: user!.email, tokenId: user!.token_id, tokenHash: user!.token_hash },
      apiKeyIds: keys.map((k) => k.id),
      pendingJobs: pending.map((j) => j.id),
      runningJobs: running.map((j) => ({ id: j.id, machine_id: j.machine_id })),
      consumerItems: consumerItems.map((i) => ({ id: i.id, attempt: i.attempt })),
      reviewItems: review.map((i) => i.id),
      deadItems: dead.map((i) => i.id),
    };
  } finally {
    conn.release();
  }
}

// ---------------------------------------------------------------------------------------------
// Recording what a function sends, and explaining it.

interface Statement {
  text: string;
  params: unknown[];
  types: number[];
}

const TX_CONTROL = /^\s*(begin|commit|rollback|savepoint|release savepoint|rollback to savepoint)\b/i;
/** postgres.js reads the catalogue once per connection (array types): not the code under test */
const DRIVER_QUERY = /\bpg_catalog\./;

/** Runs `fn` and returns the statements it sent through `sql` (transaction control left out). */
async function record(sql: Sql, fn: () => Promise<unknown>): Promise<Statement[]> {
  const options = (sql as unknown as { options: { debug?: unknown } }).options;
  const seen: Statement[] = [];
  options.debug = (_conn: number, text: string, params: unknown[], types: number[]) => {
    if (!TX_CONTROL.test(text) && !DRIVER_QUERY.test(text)) seen.push({ text, params: [...params], types: [...types] });
  };
  try {
    await fn();
  } finally {
    options.debug = undefined;
  }
  const unique = new Map(seen.map((s) => [s.text, s]));
  return [...unique.values()];
}

const JSON_TYPES = new Set([114, 3802]);

/** A parameter value as an SQL literal (EXECUTE takes literals; the prepared types coerce them). */
function literal(value: unknown, type: number): string {
  if (value === null || value === undefined) return 'NULL';
  const quote = (s: string) => `'${s.replace(/'/g, "''")}'`;
  if (JSON_TYPES.has(type)) return quote(JSON.stringify(value));
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return quote(`\\x${Buffer.from(value).toString('hex')}`);
  if (value instanceof Date) return quote(value.toISOString());
  if (Array.isArray(value)) {
    const element = (e: unknown): string =>
      e === null || e === undefined
        ? 'NULL'
        : `"${(e instanceof Date ? e.toISOString() : String(e)).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    return quote(`{${value.map(element).join(',')}}`);
  }
  if (typeof value === 'object') return quote(JSON.stringify(value));
  return quote(String(value));
}

interface PlanNode {
  'Node Type': string;
  'Total Cost': number;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Conflict Arbiter Indexes'?: string[];
  Plans?: PlanNode[];
}

function flatten(node: PlanNode, out: PlanNode[] = []): PlanNode[] {
  out.push(node);
  for (const child of node.Plans ?? []) flatten(child, out);
  return out;
}

interface Plans {
  statement: Statement;
  /** planned with the statement's values: what postgres.js's first five executions run */
  custom: PlanNode[];
  /** planned without values */
  generic: PlanNode[];
}

const CPU_OPERATOR_COST = 0.0025;

/**
 * The plan a named prepared statement settles on after its five custom plans, by Postgres's own
 * rule (plancache.c choose_custom_plan): the generic plan once it is estimated cheaper than a
 * custom plan plus the planning that the custom plan costs (1000 × cpu_operator_cost per
 * relation, plus one).
 */
function settledPlan(p: Plans): { kind: 'custom' | 'generic'; nodes: PlanNode[] } {
  if (p.statement.params.length === 0) return { kind: 'generic', nodes: p.generic };
  const relations = p.custom.filter((n) => n['Relation Name']).length;
  const custom = p.custom[0]!['Total Cost'] + 1000 * CPU_OPERATOR_COST * (relations + 1);
  return p.generic[0]!['Total Cost'] < custom ? { kind: 'generic', nodes: p.generic } : { kind: 'custom', nodes: p.custom };
}

const typeNames = new Map<number, string>();

async function explain(sql: Sql, statements: Statement[]): Promise<Plans[]> {
  const conn = await sql.reserve();
  try {
    const out: Plans[] = [];
    for (const s of statements) {
      for (const t of s.types) {
        if (t && !typeNames.has(t)) {
          const [row] = await conn<Array<{ name: string }>>`select format_type(${t}::oid, null) as name`;
          typeNames.set(t, row!.name);
        }
      }
      // postgres.js infers a type from JS values (bytea, timestamptz, bool, json); the rest is
      // inferred by the server from the statement, exactly as when postgres.js describes it
      const types = s.types.map((t, i) => (t && (JSON_TYPES.has(t) || !Array.isArray(s.params[i])) ? typeNames.get(t)! : 'unknown'));
      const args = s.params.length ? `(${s.params.map((v, i) => literal(v, s.types[i] ?? 0)).join(', ')})` : '';
      await conn.unsafe(`prepare idx_probe ${types.length ? `(${types.join(', ')})` : ''} as ${s.text}`);
      try {
        const plan = async (mode: string) => {
          await conn.unsafe(`set plan_cache_mode = ${mode}`);
          const [row] = await conn.unsafe(`explain (format json) execute idx_probe${args}`);
          const json = (row as Record<string, unknown>)['QUERY PLAN'];
          const doc = (typeof json === 'string' ? JSON.parse(json) : json) as Array<{ Plan: PlanNode }>;
          return flatten(doc[0]!.Plan);
        };
        out.push({ statement: s, custom: await plan('force_custom_plan'), generic: await plan('force_generic_plan') });
      } finally {
        await conn.unsafe('deallocate idx_probe; reset plan_cache_mode');
      }
    }
    return out;
  } finally {
    conn.release();
  }
}

function indexesOf(nodes: PlanNode[]): string[] {
  return nodes.flatMap((n) => [...(n['Index Name'] ? [n['Index Name']] : []), ...(n['Conflict Arbiter Indexes'] ?? [])]);
}

function largeSeqScans(nodes: PlanNode[]): string[] {
  return nodes.filter((n) => n['Node Type'] === 'Seq Scan' && LARGE_TABLES.has(n['Relation Name'] ?? '')).map((n) => n['Relation Name']!);
}

function describePlan(nodes: PlanNode[]): string {
  return nodes
    .filter((n) => n['Relation Name'] || n['Index Name'])
    .map((n) => `${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}`)
    .join('; ');
}


// ---------------------------------------------------------------------------------------------
// Known exceptions: statements that scan a large table in one of their two plans for a reason no
// index can change (the fix is in their SQL, outside the files that own the indexes). Only their
// other plan is checked; each exception must still be needed (that plan still scans) and still be
// met by a probe, so a fix makes this test ask for the exception's removal.

interface KnownScan {
  /** the statement's text (whitespace squashed) starts with this */
  statement: string;
  plan: 'custom' | 'settled';
  why: string;
  seen?: boolean;
}

const KNOWN_SCANS: KnownScan[] = [];

// ---------------------------------------------------------------------------------------------
// The probes: what runs, and the indexes it must use. `tx` probes run in a transaction that is
// rolled back; `sql` probes need a pool (they open their own transactions) and commit.

interface Probe {
  name: string;
  indexes: string[];
  tx?: (q: Queryable, f: Fixture) => Promise<unknown>;
  sql?: (s: Sql, f: Fixture) => Promise<unknown>;
}

const keyListener = { invalidate: async () => undefined };

const API_PROBES: Probe[] = [
  // authentication and keys
  { name: 'X-API-Key look-up (findApiKeyByHash)', indexes: ['api_keys_key_hash_key'], tx: (q) => findApiKeyByHash(q, sha256('key-17')) },
  {
    name: 'last_used_at flush (touchApiKeys)',
    indexes: ['api_keys_pkey'],
    tx: (q, f) => touchApiKeys(q, f.apiKeyIds.map((id) => ({ id, at: new Date() }))),
  },
  {
    name: 'Bearer look-up (findAccessTokenByHash)',
    indexes: ['access_tokens_token_hash_key', 'users_pkey'],
    tx: (q, f) => findAccessTokenByHash(q, f.user.tokenHash),
  },
  { name: 'GET /auth/me (getSession)', indexes: ['access_tokens_pkey', 'users_pkey'], tx: (q, f) => getSession(q, f.user.tokenId) },
  { name: 'logout (revokeAccessToken)', indexes: ['access_tokens_pkey'], tx: (q, f) => revokeAccessToken(q, f.user.tokenId) },
  { name: 'login (findUserByEmail)', indexes: ['users_email_key'], tx: (q, f) => findUserByEmail(q, f.user.email.toUpperCase()) },
  { name: 'user deactivation revokes its tokens (deactivateUserRow)', indexes: ['access_tokens_user_idx'], tx: (q, f) => deactivateUserRow(q, f.user.id) },
  {
    name: 'GET /settings/api-keys, first page (listApiKeyRows)',
    indexes: ['api_keys_tenant_idx'],
    tx: (q, f) => listApiKeyRows(q, f.tenant, { limit: 20, offset: 0 }),
  },
  {
    name: 'GET /settings/api-keys, last page (listApiKeyRows)',
    indexes: ['api_keys_tenant_idx'],
    tx: (q, f) => listApiKeyRows(q, f.tenant, { limit: 100, offset: 3900 }),
  },
  {
    name: 'POST /settings/api-keys (createApiKey)',
    indexes: [],
    sql: (s, f) => createApiKey(s, keyListener, { tenantId: f.tenant, userId: f.user.id, source: 'api' }, { name: 'probe key', scopes: ['queues:read'] }),
  },
  {
    name: 'rotate and revoke a key (replaceApiKeySecret, deactivateApiKey, findApiKey)',
    indexes: ['api_keys_pkey'],
    tx: async (q, f) => {
      await replaceApiKeySecret(q, f.tenant, f.apiKeyIds[0]!, { prefix: 'svc_ak_probe', hash: sha256('probe') });
      await deactivateApiKey(q, f.tenant, f.apiKeyIds[1]!);
      await findApiKey(q, f.tenant, f.apiKeyIds[2]!);
    },
  },
  // jobs
  {
    name: 'POST /jobs/trigger with machine auto-selection (triggerJobByApi)',
    indexes: ['jobs_active_machine_idx'],
    sql: (s, f) =>
      triggerJobByApi({ sql: s }, { tenantId: f.tenant, apiKeyId: f.apiKeyIds[3]! }, {
        rawProcessId: f.process,
        body: () => ({ process_id: f.process, priority: 4 }),
      }),
  },
  {
    name: 'POST /webhooks/trigger/{process_id} (triggerJobByWebhook)',
    indexes: [],
    sql: (s, f) =>
      triggerJobByWebhook({ sql: s }, { tenantId: f.tenant, apiKeyId: f.apiKeyIds[3]! }, {
        rawProcessId: f.process,
        processId: () => f.process,
        body: () => ({ machine_id: f.onlineMachine, input_data: { a: 1 } }),
      }),
  },
  {
    name: 'GET /jobs?input_data={…} (listJobs, a search by payload)',
    indexes: ['jobs_input_data_idx', 'jobs_pkey', 'processes_pkey', 'machines_pkey'],
    sql: (s, f) => listJobs(s, f.tenant, { page: 1, limit: 20, input_data: '{"order":"A-17"}' }),
  },
  { name: 'GET /jobs/{job_id} (findJobWithNames)', indexes: ['jobs_pkey'], tx: (q, f) => findJobWithNames(q, f.tenant, f.pendingJobs[0]!) },
  { name: 'GET /settings/jobs/{job_id}/logs (readJobLogs)', indexes: ['jobs_pkey'], sql: (s, f) => readJobLogs(s, pgLogArchive, f.tenant, f.pendingJobs[0]!) },
  {
    name: 'POST /jobs/{job_id}/stop of a pending job (stopJob)',
    indexes: ['jobs_pkey'],
    sql: (s, f) => stopJob({ sql: s }, f.tenant, f.pendingJobs[2]!),
  },
  {
    name: 'POST /jobs/{job_id}/stop of a running job (requestRunningJobStop)',
    indexes: ['jobs_pkey'],
    tx: (q, f) => requestRunningJobStop(q, f.runningJobs[3]!.id, f.tenant),
  },
  // queue items
  { name: 'queue by name (getActiveQueueByName)', indexes: [], sql: (s, f) => getActiveQueueByName(s, f.tenant, 'queue-1') },
  {
    name: 'POST …/items (addItem)',
    indexes: [],
    sql: (s, f) => addItem({ sql: s }, f.queue, { data: { probe: true }, reference: 'probe-ref', priority: 5 }),
  },
  {
    name: 'POST …/items/bulk with 1000 items (addItemsBulk)',
    indexes: [],
    sql: (s, f) => addItemsBulk({ sql: s }, f.queue, { items: Array.from({ length: 1000 }, (_, i) => ({ i })) }),
  },
  {
    name: 'GET …/items, first page (listItems)',
    indexes: ['queue_items_list_idx', 'queue_items_pkey', 'queue_item_counts_pkey'],
    sql: (s, f) => listItems(s, f.queue, { page: 1, limit: 20 }),
  },
  {
    name: 'GET …/items, page 500 (listItems)',
    indexes: ['queue_items_list_idx', 'queue_items_pkey'],
    sql: (s, f) => listItems(s, f.queue, { page: 500, limit: 100 }),
  },
  {
    name: 'GET …/items?status=completed, page 500 (listItems)',
    indexes: ['queue_items_status_list_idx', 'queue_items_pkey', 'queue_item_counts_pkey'],
    sql: (s, f) => listItems(s, f.queue, { page: 500, limit: 100, status: 'completed' }),
  },
  {
    name: 'GET …/items?data={…} (listItems, a search by payload)',
    indexes: ['queue_item_payloads_data_idx', 'queue_items_pkey', 'queue_item_payloads_pkey'],
    sql: (s, f) => listItems(s, f.queue, { page: 1, limit: 100, data: JSON.stringify(f.itemData) }),
  },
  {
    name: 'GET …/items?status=failed (listItems)',
    indexes: ['queue_items_status_list_idx', 'queue_items_pkey'],
    sql: (s, f) => listItems(s, f.queue, { page: 1, limit: 100, status: 'failed' }),
  },
  {
    name: 'GET …/items?exception_type=business (listItems, its total from the counters)',
    indexes: ['queue_items_exception_list_idx', 'queue_items_pkey', 'queue_item_counts_pkey'],
    sql: (s, f) => listItems(s, f.queue, { page: 1, limit: 100, exception_type: 'business' }),
  },
  // idempotency and audit
  {
    name: 'Idempotency-Key first use, replay and release (runIdempotent)',
    indexes: ['idempotency_keys_pkey'],
    sql: async (s, f) => {
      const id = { tenantId: f.tenant, scope: 'queue-items.add', key: 'probe-key' };
      await runIdempotent(s, id, { a: 1 }, async () => ({ status: 201, body: { ok: true } }));
      await runIdempotent(s, id, { a: 1 }, async () => ({ status: 201, body: { ok: true } }));
      await runIdempotent(s, { ...id, key: 'probe-failing' }, { a: 1 }, async () => {
        throw new Error('the work failed');
      }).catch(() => undefined);
    },
  },
  {
    name: 'Idempotency-Key claim freed after a lost answer (releaseLostClaim)',
    indexes: ['idempotency_keys_pkey'],
    tx: (q, f) => releaseLostClaim(q, { tenantId: f.tenant, scope: 'queue-items.add', key: 'idem-5' }, '00000000-0000-4000-8000-000000000000'),
  },
  {
    name: 'Idempotency-Key replay of a seeded key (findIdempotencyKey)',
    indexes: ['idempotency_keys_pkey'],
    tx: (q, f) => findIdempotencyKey(q, { tenantId: f.tenant, scope: 'queue-items.add', key: 'idem-4' }),
  },
  {
    name: 'expired Idempotency-Keys purge, the dispatcher\'s sweep (sweepExpiredIdempotencyKeys)',
    indexes: ['idempotency_keys_created_idx'],
    tx: (q) => sweepExpiredIdempotencyKeys(q),
  },
  {
    name: 'audit row (recordAudit)',
    indexes: [],
    tx: (q, f) => recordAudit(q, { tenantId: f.tenant, actorType: 'api_key', action: 'trigger_job', source: 'webhook', details: { a: 1 } }),
  },
  // catalogue (small tables; listed so that a large table never sneaks into them)
  {
    name: 'GET /processes/list?folder_id (listProcesses)',
    indexes: [],
    tx: (q, f) => listProcesses(q, f.tenant, { page: 1, limit: 20, folder_id: f.folder, is_active: true }),
  },
  { name: 'GET /processes/list (listProcesses)', indexes: [], tx: (q, f) => listProcesses(q, f.tenant, { page: 2, limit: 20, is_active: true }) },
  {
    name: 'GET /machines/list?status=online (listMachines)',
    indexes: [],
    tx: (q, f) => listMachines(q, f.tenant, { page: 1, limit: 20, status: 'online', is_active: true }),
  },
  {
    name: 'GET /settings/queues with item counts (listQueues, loadQueueItemCounts)',
    indexes: [],
    tx: async (q, f) => loadQueueItemCounts(q, (await listQueues(q, f.tenant, {})).rows.map((r) => r.id)),
  },
  {
    name: 'GET /assets/by-name/{name} (readAssetWithKey: existence look-up, readAssetValue)',
    indexes: ['assets_tenant_id_name_key', 'asset_values_pkey'],
    tx: async (q, f) => {
      // a key that must choose an environment: the existence look-up runs, then the 422
      await readAssetWithKey(q, Buffer.alloc(32, 7), { tenantId: f.tenant, keyId: f.apiKeyIds[0]!, environments: ['staging', 'dev'] },
        { name: 'asset-7', environment: undefined }).catch(() => undefined);
      await readAssetValue(q, Buffer.alloc(32, 7), f.tenant, 'asset-7', 'production');
    },
  },
  { name: 'Bull Board machine queues (listMachineNames)', indexes: [], tx: (q, f) => listMachineNames(q, f.tenant) },
  // human review and re-drive
  {
    name: 'approve a reviewed item (reviewQueueItem)',
    indexes: ['queue_items_pkey'],
    sql: (s, f) =>
      reviewQueueItem({ sql: s }, { tenantId: f.tenant, userId: f.user.id, reviewer: f.user.email },
        { queueId: f.queue.id, itemId: f.reviewItems[0]! }, { approve: true }),
  },
  {
    name: 'reject a reviewed item (reviewQueueItem)',
    indexes: ['queue_items_pkey'],
    sql: (s, f) =>
      reviewQueueItem({ sql: s }, { tenantId: f.tenant, userId: f.user.id, reviewer: f.user.email },
        { queueId: f.queue.id, itemId: f.reviewItems[1]! }, { approve: false, reason: 'no' }),
  },
  {
    name: 're-drive chosen dead-letter items (redriveDeadLetterItems)',
    indexes: ['queue_items_pkey'],
    tx: async (q, f) => {
      await getTenantQueue(q as Sql, f.tenant, f.queue.id);
      await redriveDeadLetterItems(q, { tenantId: f.tenant, queueId: f.queue.id, itemIds: f.deadItems });
    },
  },
  {
    name: 're-drive every dead-letter item of a queue (redriveDeadLetterItems)',
    indexes: ['queue_items_status_list_idx'],
    tx: (q, f) => redriveDeadLetterItems(q, { tenantId: f.tenant, queueId: f.queue.id, itemIds: null }),
  },
  {
    name: 'a chunk of a bulk action on a queue\'s items, from its cursor (nextChunk)',
    indexes: ['queue_items_list_idx'],
    tx: (q, f) => nextChunk(q, {
      tenantId: f.tenant, queueId: f.queue.id, target: 'queue_items', action: 'delete', filter: {}, ids: null, snapshotAt: new Date(), includeBusiness: false,
    }, { createdAt: '2000-01-01 00:00:00+00', id: '00000000-0000-0000-0000-000000000000' }, 500),
  },
  {
    name: 'a chunk of a bulk retry of a workspace\'s jobs: those not retried yet (nextChunk)',
    indexes: ['jobs_tenant_status_list_idx', 'jobs_parent_idx'],
    tx: (q, f) => nextChunk(q, {
      tenantId: f.tenant, queueId: null, target: 'jobs', action: 'retry', filter: { status: 'failed' }, ids: null, snapshotAt: new Date(), includeBusiness: false,
    }, null, 500),
  },
];

const ENGINE_PROBES: Probe[] = [
  // agents
  { name: 'agent start-up (findMachineByKey)', indexes: ['machines_machine_key_hash_key'], tx: (q, f) => findMachineByKey(q, f.machineKey) },
  {
    name: 'heartbeat, lease renewal with its stop poll, goodbye (recordHeartbeat, renewJobLeases, recordGoodbye)',
    indexes: ['machines_pkey', 'jobs_active_machine_idx'],
    tx: async (q, f) => {
      await recordHeartbeat(q, f.onlineMachine, { running: 1, agentVersion: 'probe' });
      const run = f.runningJobs[3]!;
      await renewJobLeases(q, run.machine_id, [{ id: run.id, attempt: 1, alive: true }, { id: f.runningJobs[2]!.id, attempt: 1, alive: false }], 30);
      await recordGoodbye(q, f.onlineMachine);
    },
  },
  { name: 'job start on its machine (startJob)', indexes: ['jobs_pkey'], tx: (q, f) => startJob(q, f.pendingJobs[1]!, f.onlineMachine) },
  {
    name: 'job read back after a lost final answer (findRunEndedAs)',
    indexes: ['jobs_pkey'],
    tx: (q, f) => findRunEndedAs(q, f.runningJobs[3]!.id, 1, 'completed'),
  },
  {
    name: 'job progress (reportJobProgress)',
    indexes: ['jobs_pkey'],
    tx: (q, f) => reportJobProgress(q, f.runningJobs[3]!.id, 1, { progress_percent: 50, logs_append: { text: 'half\n', seq: 1 }, resource_metrics: { cpu: 1 } }),
  },
  {
    name: 'job log append (appendJobLogs)',
    indexes: ['jobs_pkey'],
    tx: (q, f) => appendJobLogs(q, f.runningJobs[3]!.id, 1, { text: 'line\n', seq: 7 }),
  },
  {
    name: 'finished jobs\' logs into the archive, the dispatcher\'s sweep (archiveJobLogs)',
    indexes: ['jobs_logs_to_archive_idx'],
    sql: (s) => archiveJobLogs(s, pgLogArchive, 30),
  },
  {
    name: 'job completed with a chained process (finishJob)',
    indexes: ['jobs_pkey', 'jobs_active_machine_idx'],
    sql: (s, f) => finishJob(s, f.runningJobs[0]!.id, 1, { to: 'completed', output_data: { ok: true } }),
  },
  {
    name: 'job failed with auto-retry (finishJob)',
    indexes: ['jobs_pkey', 'jobs_active_machine_idx'],
    sql: (s, f) => finishJob(s, f.runningJobs[1]!.id, 1, { to: 'failed', error_message: 'probe' }),
  },
  {
    name: 'consumer settles and takes items (settleAndClaimItems)',
    indexes: ['queue_items_pkey', 'queue_items_ready_idx'],
    tx: (q, f) =>
      settleAndClaimItems(q, {
        queueId: f.queue.id,
        jobId: f.runningJobs[2]!.id,
        jobAttempt: 1,
        machineId: f.runningJobs[2]!.machine_id,
        outcomes: f.consumerItems.slice(0, 2).map((i) => ({ id: i.id, attempt: i.attempt, status: 'completed' as const, result: { ok: 1 } })),
        take: 10,
      }),
  },
  {
    name: 'consumer settles and takes items past the claim floor (settleAndClaimItems, CLAIM_FLOOR=on)',
    indexes: ['queue_items_pkey', 'queue_items_ready_idx', 'queue_ready_floor_pkey'],
    tx: async (q, f) => {
      await recomputeClaimFloors(q, { mode: 'on' });
      return settleAndClaimItems(q, {
        queueId: f.queue.id,
        jobId: f.runningJobs[2]!.id,
        jobAttempt: 1,
        machineId: f.runningJobs[2]!.machine_id,
        outcomes: f.consumerItems.slice(0, 2).map((i) => ({ id: i.id, attempt: i.attempt, status: 'completed' as const, result: { ok: 1 } })),
        take: 10,
      }, { floor: true });
    },
  },
  {
    name: 'consumer hands back unstarted items (releaseQueueItems)',
    indexes: ['queue_items_in_progress_idx'],
    tx: (q, f) => releaseQueueItems(q, f.runningJobs[2]!.id, f.consumerItems.slice(2, 4)),
  },
  {
    name: 'consumer hands back what a take with a lost answer gave it (releaseUnknownClaims)',
    indexes: ['queue_items_in_progress_idx'],
    tx: (q, f) => releaseUnknownClaims(q, f.runningJobs[2]!.id, f.consumerItems.slice(0, 2).map((i) => i.id)),
  },
  {
    name: 'consumer job ends holding items (finishJob, failItemsOfJobs)',
    indexes: ['jobs_pkey', 'queue_items_in_progress_idx'],
    sql: (s, f) => finishJob(s, f.runningJobs[2]!.id, 1, { to: 'failed', error_message: 'probe' }),
  },
  {
    name: 'items of ended jobs fail (failItemsOfJobs)',
    indexes: ['queue_items_in_progress_idx'],
    tx: (q, f) => failItemsOfJobs(q, [f.runningJobs[3]!.id, f.runningJobs[2]!.id], 'probe'),
  },
  // dispatcher
  { name: 'orphaned items sweep (failOrphanedItems)', indexes: ['queue_items_in_progress_idx'], tx: (q) => failOrphanedItems(q, 'probe') },
  {
    name: 'item retry policy of one queue (applyItemRetryPolicy)',
    indexes: ['queue_items_failed_idx'],
    tx: (q, f) => applyItemRetryPolicy(q, f.queue.id),
  },
  { name: 'item retry policy of every queue (applyItemRetryPolicy)', indexes: ['queue_items_failed_idx'], tx: (q) => applyItemRetryPolicy(q, null) },
  { name: 'the claim floors\' pass (recomputeClaimFloors)', indexes: ['queue_items_ready_idx', 'queue_ready_floor_pkey'], tx: (q) => recomputeClaimFloors(q, { mode: 'on' }) },
  {
    name: 'the claim floors\' pass from below each floor (recomputeClaimFloors, not full)',
    indexes: ['queue_items_ready_idx', 'queue_ready_floor_pkey'],
    tx: (q) => recomputeClaimFloors(q, { mode: 'on', full: false }),
  },
  {
    name: 'consumer start decision (startQueueConsumers)',
    indexes: ['jobs_trigger_active_idx', 'queue_items_ready_idx', 'jobs_active_machine_idx'],
    sql: (s, f) => startQueueConsumers(s, f.idleQueue),
  },
  {
    // after the case above filled the queue's triggers: the decision reads the ready items and stops there
    name: 'consumer start decision past the claim floors (startQueueConsumers, floors engaged)',
    indexes: ['jobs_trigger_active_idx', 'queue_items_ready_idx'],
    sql: (s, f) => startQueueConsumers(s, f.idleQueue, { floor: true }),
  },
  {
    name: 'queues needing consumers past the claim floors (queuesNeedingConsumers, floors engaged)',
    indexes: ['jobs_trigger_active_idx', 'queue_items_ready_idx'],
    sql: async (s, f) => {
      await queuesNeedingConsumers(s, null, { floor: true });
    },
  },
  {
    name: 'queues needing consumers (queuesNeedingConsumers)',
    indexes: ['jobs_trigger_active_idx', 'queue_items_ready_idx'],
    sql: async (s, f) => {
      await queuesNeedingConsumers(s);
      await queuesNeedingConsumers(s, f.tenant);
    },
  },
  { name: 'follow-up machine choice (pickMachineForFollowUp)', indexes: ['jobs_active_machine_idx'], tx: (q, f) => pickMachineForFollowUp(q, f.tenant, f.onlineMachine) },
  { name: 'timeouts sweep (timeOutJobs)', indexes: ['jobs_active_idx'], sql: (s) => timeOutJobs(s) },
  // the active-jobs partial indexes are both small: the planner takes either (it moved to jobs_active_idx with jobs.acknowledged_at)
  { name: 'offline machines and lapsed leases sweep (sweepOfflineMachines)', indexes: ['jobs_active_idx'], sql: (s) => sweepOfflineMachines(s, 30) },
  { name: 'restarted agent gives up its jobs (giveUpMachineJobs)', indexes: ['jobs_active_machine_idx'], sql: (s, f) => giveUpMachineJobs(s, f.offlineMachine) },
  { name: 'stop re-publication (pendingStops)', indexes: ['jobs_active_idx'], sql: (s) => pendingStops(s, 1000) },
  { name: 'SLA sweep (markSlaBreaches)', indexes: ['jobs_sla_due_idx'], sql: (s) => markSlaBreaches(s) },
  {
    name: 'a queue\'s expired ended items, the retention pass\'s batch (expiredRows)',
    indexes: ['queue_items_ended_idx'],
    tx: (q, f) => expiredRows(q, {
      kind: 'queue_items', target_id: f.queue.id, tenant_id: f.tenant, queue_name: f.queue.name, action: 'delete', completed_days: 30, failed_days: 90, pending: 0,
    }, 1000),
  },
  {
    name: 'a workspace\'s expired ended jobs, the retention pass\'s batch (expiredRows)',
    indexes: ['jobs_ended_idx'],
    tx: (q, f) => expiredRows(q, {
      kind: 'jobs', target_id: f.tenant, tenant_id: f.tenant, queue_name: null, action: 'delete', completed_days: 90, failed_days: 90, pending: 0,
    }, 1000),
  },
  {
    name: 'a later batch of the same pass starts after the previous one (expiredRows after a cursor)',
    indexes: ['queue_items_ended_idx'],
    tx: (q, f) => expiredRows(q, {
      kind: 'queue_items', target_id: f.queue.id, tenant_id: f.tenant, queue_name: f.queue.name, action: 'delete', completed_days: 30, failed_days: 90, pending: 0,
    }, 1000, { endedKey: '2000-01-01 00:00:00.123456+00', id: '00000000-0000-0000-0000-000000000000' }),
  },
  {
    name: 'a later batch of a workspace\'s jobs pass (expiredRows after a cursor)',
    indexes: ['jobs_ended_idx'],
    tx: (q, f) => expiredRows(q, {
      kind: 'jobs', target_id: f.tenant, tenant_id: f.tenant, queue_name: null, action: 'delete', completed_days: 90, failed_days: 90, pending: 0,
    }, 1000, { endedKey: '2000-01-01 00:00:00.123456+00', id: '00000000-0000-0000-0000-000000000000' }),
  },
];

describe('indexes serve the hot statements on a realistic data set', () => {
  let t: TestContext;
  let f: Fixture;
  const report: string[] = [];

  beforeAll(async () => {
    t = await createTestContext();
    f = await loadDataSet(t.sql);
  }, 120_000);

  afterAll(async () => {
    if (process.env.SVC_INDEX_REPORT) console.log(report.join('\n'));
    await t?.close();
  });

  class Rollback extends Error {}

  async function check(probe: Probe): Promise<void> {
    let statements: Statement[];
    if (probe.tx) {
      const run = probe.tx;
      statements = await record(t.sql, () =>
        t.sql.begin(async (tx) => {
          await run(tx, f);
          throw new Rollback();
        }).catch((err) => {
          if (!(err instanceof Rollback)) throw err;
        }),
      );
    } else {
      statements = await record(t.sql, () => probe.sql!(t.sql, f));
    }
    expect(statements.length).toBeGreaterThan(0);
    const plans = await explain(t.sql, statements);
    const used = new Set<string>();
    for (const p of plans) {
      const text = squash(p.statement.text).trim();
      const settled = settledPlan(p);
      report.push(`## ${probe.name}\n${text.slice(0, 200)}\n  custom:  ${describePlan(p.custom)}\n  generic: ${describePlan(p.generic)}${settled.kind === 'generic' ? '  (settles on generic)' : ''}`);
      const known = KNOWN_SCANS.find((k) => text.startsWith(k.statement));
      if (known) known.seen = true;
      const checks = [
        { plan: 'custom', nodes: p.custom, knownScan: known?.plan === 'custom' },
        { plan: `settled (${settled.kind})`, nodes: settled.nodes, knownScan: known?.plan === 'settled' },
      ];
      for (const c of checks) {
        const scans = largeSeqScans(c.nodes);
        if (c.knownScan) {
          // still needed? once this plan is clean, the exception must go
          expect({ statement: text, plan: c.plan, knownScanStillThere: scans.length > 0 })
            .toEqual({ statement: text, plan: c.plan, knownScanStillThere: true });
        } else {
          expect({ statement: text, plan: c.plan, seqScans: scans }).toEqual({ statement: text, plan: c.plan, seqScans: [] });
        }
      }
      for (const i of [...indexesOf(p.custom), ...indexesOf(settled.nodes)]) used.add(i);
    }
    expect([...used]).toEqual(expect.arrayContaining(probe.indexes));
  }

  describe('API requests', () => {
    for (const probe of API_PROBES) {
      it(`${probe.name} scans no large table${probe.indexes.length ? ` and uses ${probe.indexes.join(', ')}` : ''}`, () => check(probe));
    }
  });

  describe('dispatcher and agents', () => {
    for (const probe of ENGINE_PROBES) {
      it(`${probe.name} scans no large table${probe.indexes.length ? ` and uses ${probe.indexes.join(', ')}` : ''}`, () => check(probe));
    }

    it('reconciler walks pending jobs oldest first through jobs_active_idx (reconcilePendingJobs)', async () => {
      const bull = createBullDispatch({ redis: t.redisTarget, prefix: t.redisPrefix });
      try {
        await check({ name: 'reconciler (reconcilePendingJobs)', indexes: ['jobs_active_idx'], sql: (s) => reconcilePendingJobs(s, bull) });
      } finally {
        await bull.close();
      }
    });
  });

  it('meets every known exception in some probe (a stale exception fails here)', () => {
    expect(KNOWN_SCANS.filter((k) => !k.seen).map((k) => k.statement)).toEqual([]);
  });
});
