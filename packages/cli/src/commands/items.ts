import type { Command, CommandContext } from '../context';
import { UsageError } from '../errors';
import { ITEMS_IMPORT_HELP, runItemsImport } from './items-import';
import { ITEMS_EXPORT_HELP, runItemsExport } from './items-export';

/** Each subcommand of `svc items`: its function and its help. */
const SUBCOMMANDS: Record<string, { run: (args: string[], ctx: CommandContext) => Promise<void>; help: string; summary: string }> = {
  import: { run: runItemsImport, help: ITEMS_IMPORT_HELP, summary: 'add a CSV or NDJSON file\'s rows as items of a queue' },
  export: { run: runItemsExport, help: ITEMS_EXPORT_HELP, summary: 'write a queue\'s items as NDJSON (re-importable) or CSV' },
};

export const ITEMS_HELP = `Usage:
  svc items <subcommand> [options]   (svc items <subcommand> --help for details)

${Object.entries(SUBCOMMANDS).map(([name, s]) => `  ${name.padEnd(8)}  ${s.summary}`).join('\n')}`;

async function runItems(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === '--help' || sub === '-h') return void ctx.output(false).text(ITEMS_HELP);
  const found = sub ? SUBCOMMANDS[sub] : undefined;
  if (!found) throw new UsageError(sub ? `unknown items command "${sub}"` : 'missing items command', ITEMS_HELP);
  await found.run(rest, ctx);
}

export const itemsCommand: Command = {
  summary: 'queue items in bulk: import a file, export a queue',
  help: ITEMS_HELP,
  run: runItems,
};
