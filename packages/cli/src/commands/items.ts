import type { Command, CommandContext } from '../context';
import { UsageError } from '../errors';
import { ITEMS_EXPORT_HELP, runItemsExport } from './items-export';

export const ITEMS_HELP = `Usage:
  svc items export --tenant T --queue Q [--format ndjson|csv] [filters] [FILE|-]

  export   writes a queue's items (svc items export --help for details)`;

/** One subcommand a case: each lives in its own file. */
async function runItems(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'export':
      return runItemsExport(rest, ctx);
    case '--help':
    case '-h':
      return void ctx.output(false).text(ITEMS_HELP);
    default:
      throw new UsageError(sub ? `unknown items command "${sub}"` : 'missing items command', ITEMS_HELP);
  }
}

export const itemsCommand: Command = {
  summary: 'export a queue\'s items (NDJSON or CSV)',
  help: `${ITEMS_HELP}\n\n${ITEMS_EXPORT_HELP}`,
  fields: {},
  run: runItems,
};
