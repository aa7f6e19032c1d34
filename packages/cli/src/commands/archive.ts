import type { Engine } from '@svc/core';
import { optionalString, parse, required } from '../args';
import type { Command, CommandContext } from '../context';
import { CliError, EXIT, UsageError } from '../errors';
import { table } from '../output';

export const ARCHIVE_HELP = `Usage:
  svc archive list    --tenant T [--queue QUEUE] [--from DATE] [--to DATE]
  svc archive restore --tenant T --queue QUEUE --from DATE --to DATE
  svc archive sweep   [--older-than-hours H] [--dry-run]

  Retention archives the items of queues with retention_action "archive", and the jobs of
  workspaces with job_retention_action "archive", into the archive before deleting them
  (docs/decisions/retention.md): a directory (ARCHIVE_DIR) or an S3-compatible bucket
  (ARCHIVE_S3_BUCKET, ARCHIVE_S3_PREFIX, ARCHIVE_S3_REGION, ARCHIVE_S3_ENDPOINT; credentials
  from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or the AWS SDK's other sources), set as the
  dispatcher has them. list prints the archive's manifest: one file per queue, hour
  and batch. restore adds the archived items of QUEUE that ended in [--from, --to) back to it as
  new items (new ids, status new, their data, priority and reference), to be processed again;
  the archive keeps its copy, so restoring the same window twice adds them twice. sweep removes
  the archive's files that the manifest does not list (left by batches killed before they
  committed) and that were written at least H hours ago (default 24), in every workspace; with
  --dry-run it only prints them.

  DATE     ISO 8601 date-time, e.g. 2026-11-01T00:00:00Z
  --json   print JSON for scripts`;

const FLAGS = {
  tenant: { type: 'string' }, queue: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' },
  'older-than-hours': { type: 'string' }, 'dry-run': { type: 'boolean' },
} as const;

/** `svc archive sweep`: the whole archive, not one workspace's (its files are laid out by workspace, its orphans are no one's). */
async function runSweep(p: ReturnType<typeof parse>, ctx: CommandContext): Promise<void> {
  const raw = optionalString(p, 'older-than-hours') ?? '24';
  const hours = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : NaN;
  if (!(hours >= 0 && hours <= 24 * 3650)) throw new UsageError('--older-than-hours must be a number of hours from 0 to 87600', ARCHIVE_HELP);
  const engine = await ctx.engine();
  if (!engine.archive.configured()) throw new UsageError(NO_ARCHIVE, ARCHIVE_HELP);
  const dryRun = !!p.values['dry-run'];
  const r = await engine.archive.sweepOrphans({ olderThanMs: hours * 3_600_000, dryRun });
  const o = ctx.output(!!p.values.json);
  o.result({ scanned: r.scanned, orphans: r.orphans, removed: dryRun ? 0 : r.orphans.length, busy_scopes: r.busy, dry_run: dryRun });
  o.text([
    ...r.orphans.map((k) => `${dryRun ? 'would remove' : 'removed'} ${k}`),
    `${r.scanned} file(s) listed, ${r.orphans.length} orphan(s) ${dryRun ? 'found' : 'removed'}${r.busy ? `, ${r.busy} scope(s) busy: left for the next sweep` : ''}`,
  ].join('\n'));
}

const NO_ARCHIVE = 'no archive is configured: set ARCHIVE_DIR (a directory) or ARCHIVE_S3_BUCKET (a bucket) as the dispatcher has them';

function dateFlag(value: string | undefined, flag: string): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(d.getTime())) throw new UsageError(`${flag} must be an ISO 8601 date-time, e.g. 2026-11-01T00:00:00Z`, ARCHIVE_HELP);
  return d;
}

async function queueOf(engine: Engine, tenantId: string, name: string): Promise<{ id: string; tenant_id: string; name: string }> {
  const q = await engine.catalog.findByName(tenantId, 'queue', name);
  if (!q) throw new CliError(`no queue "${name}" in this workspace`, EXIT.notFound, 'NOT_FOUND');
  return q;
}

async function runArchive(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'list' && sub !== 'restore' && sub !== 'sweep') {
    throw new UsageError(sub ? `unknown archive command "${sub}"` : 'missing archive command', ARCHIVE_HELP);
  }
  const p = parse(rest, FLAGS, ARCHIVE_HELP);
  if (p.values.help) return void ctx.output(false).text(ARCHIVE_HELP);
  if (sub === 'sweep') return runSweep(p, ctx);
  const tenantRef = required(p, 'tenant', ARCHIVE_HELP);
  const engine = await ctx.engine();
  const tenant = await engine.tenants.resolve(tenantRef);
  const o = ctx.output(!!p.values.json);
  if (sub === 'list') {
    const queueName = optionalString(p, 'queue');
    const queue = queueName === undefined ? undefined : await queueOf(engine, tenant.id, queueName);
    const files = await engine.archive.list(tenant.id, {
      queueId: queue?.id, from: dateFlag(optionalString(p, 'from'), '--from'), to: dateFlag(optionalString(p, 'to'), '--to'),
    });
    const out = files.map((f) => ({
      key: f.key, kind: f.kind, queue_id: f.queue_id, queue_name: f.queue_name, hour: f.hour.toISOString(), rows: f.rows, bytes: Number(f.bytes),
      first_ended_at: f.first_ended_at.toISOString(), last_ended_at: f.last_ended_at.toISOString(),
    }));
    o.result(out);
    o.text(out.length
      ? table(['hour', 'kind', 'queue', 'rows', 'bytes', 'key'], out.map((f) => [f.hour, f.kind, f.queue_name ?? '', f.rows, f.bytes, f.key]))
      : 'The archive holds nothing for this selection');
    return;
  }
  const queue = await queueOf(engine, tenant.id, required(p, 'queue', ARCHIVE_HELP));
  const from = dateFlag(required(p, 'from', ARCHIVE_HELP), '--from')!;
  const to = dateFlag(required(p, 'to', ARCHIVE_HELP), '--to')!;
  if (!(from < to)) throw new UsageError('--from must be before --to', ARCHIVE_HELP);
  if (!engine.archive.configured()) throw new UsageError(NO_ARCHIVE, ARCHIVE_HELP);
  const restored = await engine.archive.restoreItems(queue, from, to);
  o.result({ queue_id: queue.id, restored });
  o.text(`Restored ${restored} item(s) into queue ${queue.name} as new items`);
}

export const archiveCommand: Command = {
  summary: 'list the retention archive, restore archived items as new ones, sweep its orphan files',
  help: ARCHIVE_HELP,
  run: runArchive,
};
