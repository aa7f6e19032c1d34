import type { Engine, Sql } from '@svc/core';
import type { Command, CommandContext } from './context';
import { DEFAULT_DATABASE_URL, createCliEngine, openDatabase } from './db';
import { EXIT, UsageError, errorReport, formatErrorLine, helpHint } from './errors';
import { processIo, type CliIo } from './io';
import { createOutput } from './output';
import { tenantCommand } from './commands/tenant';
import { userCommand } from './commands/user';
import { tokenCommand } from './commands/token';
import { applyCommand } from './commands/apply';
import { demoCommand, migrateCommand } from './commands/demo';
import { bulkCommand } from './commands/bulk';
import { itemsCommand } from './commands/items';
import { archiveCommand } from './commands/archive';

/**
 * `svc` — the operators' command line. Every command connects to DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/svc), migrates, acts, and exits 0 on success or with the
 * codes of `EXIT` (errors.ts). `--json` prints one JSON document on stdout for scripts.
 */
export const COMMANDS: Record<string, Command> = {
  tenant: tenantCommand,
  user: userCommand,
  token: tokenCommand,
  apply: applyCommand,
  bulk: bulkCommand,
  items: itemsCommand,
  archive: archiveCommand,
  migrate: migrateCommand,
  demo: demoCommand,
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  return [
    'Usage: svc <command> [options]   (svc <command> --help for details)',
    '',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    `Environment: DATABASE_URL (default ${DEFAULT_DATABASE_URL}); behind PgBouncer in transaction mode also`,
    'DATABASE_POOLER=transaction and DATABASE_DIRECT_URL (migrations); ASSET_ENCRYPTION_KEY for assets.',
    'Exit codes: 0 done, 1 failed, 2 usage or invalid input, 3 not found, 4 conflict.',
  ].join('\n');
}

/** Runs one command line; resolves to the process exit code (never throws). */
export async function main(argv: string[], io: CliIo = processIo()): Promise<number> {
  const json = argv.includes('--json');
  const [name, ...rest] = argv;
  let db: Sql | undefined;
  let engine: Engine | undefined;
  const command = name ? COMMANDS[name] : undefined;
  try {
    if (!name || name === '--help' || name === '-h' || name === 'help') {
      io[name ? 'stdout' : 'stderr'](`${usage()}\n`);
      return name ? EXIT.ok : EXIT.usage;
    }
    if (!command) throw new UsageError(`unknown command "${name}"`);
    const ctx: CommandContext = {
      io,
      output: (asJson) => createOutput(io, asJson),
      sql: async () => (db ??= await openDatabase(io.env)),
      engine: async () => (engine ??= createCliEngine(await ctx.sql(), io.env)),
    };
    await command.run(rest, ctx);
    return EXIT.ok;
  } catch (err) {
    const report = errorReport(err, command?.fields);
    if (json) io.stderr(`${JSON.stringify({ success: false, error: { code: report.code, message: report.message, ...(report.details ? { details: report.details } : {}) } })}\n`);
    else {
      const hint = err instanceof UsageError ? ` — see ${helpHint(command ? name : undefined)}` : '';
      io.stderr(`${formatErrorLine(report)}${hint}\n`);
    }
    return report.exitCode;
  } finally {
    if (db) await db.end({ timeout: 5 }).catch(() => undefined);
  }
}

export * from './context';
export * from './errors';
export * from './db';
export * from './io';
export * from './output';
export * from './commands/tenant';
export * from './commands/user';
export * from './commands/token';
export * from './commands/apply';
export * from './commands/demo';
export * from './commands/items';
export * from './commands/items-import';
export * from './commands/items-export';
export * from './workspace/apply';
export * from './workspace/file';
