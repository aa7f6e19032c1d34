import type { Engine, Sql } from '@svc/core';
import type { FieldNames } from './errors';
import type { CliIo } from './io';
import type { Output } from './output';

/** What `main` hands each command. The database is opened (and migrated) only when asked for. */
export interface CommandContext {
  io: CliIo;
  /** The engine over the opened database: every command's way into the domain (core's engine.ts). */
  engine(): Promise<Engine>;
  /** The opened database itself, for what is not the domain's (the schema version). */
  sql(): Promise<Sql>;
  output(json: boolean): Output;
}

export interface Command {
  /** One line for `svc --help`. */
  summary: string;
  help: string;
  /** Maps API field names in validation errors to this command's flags. */
  fields?: FieldNames;
  run(args: string[], ctx: CommandContext): Promise<void>;
}
