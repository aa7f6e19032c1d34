import type { Engine } from '@svc/core';
import { parse, positional, required } from '../args';
import type { Command, CommandContext } from '../context';
import { table } from '../output';
import { applyWorkspace, type ApplyOptions, type ApplyReport } from '../workspace/apply';
import { readWorkspaceFile } from '../workspace/file';

export const APPLY_HELP = `Usage:
  svc apply <file.json | -> --tenant <id|name> [--dry-run] [--json]

  Applies a declarative workspace file (JSON; see docs/workspace-file.md) to a tenant: folders,
  processes, machines, queues and assets are created by name or changed in place; nothing is
  deleted, and fields the file leaves out are kept. All or nothing: one transaction.
  The key of each machine created is printed once. Asset values may be {"$env": "SVC_ASSET_NAME"}:
  the environment variable of that name, which must start with SVC_ASSET_ (no other is read).

  --dry-run   show what would be created or changed, change nothing
  --json      print JSON for scripts
  Assets need ASSET_ENCRYPTION_KEY (or the key npm start keeps in .data/asset-encryption-key).`;

// The command logic, importable: a parsed document in, the report out.

export async function applyFile(engine: Engine, tenantRef: string, doc: unknown, opts: ApplyOptions = {}): Promise<ApplyReport> {
  const tenant = await engine.tenants.resolve(tenantRef);
  return applyWorkspace(engine, tenant.id, doc, opts);
}

const MARK = { created: '+', updated: '~', unchanged: '=' } as const;

export function reportLines(file: string, r: ApplyReport): string[] {
  const s = r.summary;
  const lines = [
    `${r.dry_run ? 'Dry run of' : 'Applied'} ${file} to tenant ${r.tenant.name}: ${s.created} created, ${s.updated} updated, ${s.unchanged} unchanged${r.dry_run ? ' (nothing was changed)' : ''}`,
    ...r.resources.map((x) => `  ${MARK[x.action]} ${x.kind.padEnd(7)} ${x.name}${x.changed ? `  (${x.changed.join(', ')})` : ''}`),
  ];
  const keys = r.resources.filter((x) => x.machine_key);
  if (keys.length) {
    lines.push('', 'Machine keys, shown only this once (give each to its agent):', ...table(['machine', 'key'], keys.map((k) => [k.name, k.machine_key])).map((l) => `  ${l}`));
  }
  return lines;
}

async function runApply(args: string[], ctx: CommandContext): Promise<void> {
  const p = parse(args, { tenant: { type: 'string' }, 'dry-run': { type: 'boolean' } }, APPLY_HELP, 1);
  if (p.values.help) return void ctx.output(false).text(APPLY_HELP);
  const file = positional(p, 0, 'workspace file', APPLY_HELP);
  const tenantRef = required(p, 'tenant', APPLY_HELP);
  const doc = await readWorkspaceFile(file, ctx.io.readStdin);
  const o = ctx.output(!!p.values.json);
  // assets ask the engine for ASSET_ENCRYPTION_KEY only when the file has some (main.ts)
  const report = await applyFile(await ctx.engine(), tenantRef, doc, {
    env: ctx.io.env,
    dryRun: !!p.values['dry-run'],
  });
  o.result(report);
  o.text(reportLines(file === '-' ? 'stdin' : file, report));
}

export const applyCommand: Command = {
  summary: 'apply a declarative workspace file (folders, processes, machines, queues, assets)',
  help: APPLY_HELP,
  run: runApply,
};
