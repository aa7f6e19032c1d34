import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './errors';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export const COMMON_OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

/** `util.parseArgs`, strict, with the common flags; its errors become usage errors. */
export function parse(args: string[], options: Options, help: string, maxPositionals = 0): Parsed {
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args, options: { ...COMMON_OPTIONS, ...options }, allowPositionals: true, strict: true }) as Parsed;
  } catch (err) {
    // node's messages run over several lines and sentences; keep the first
    let message = (err as Error).message.split('\n')[0]!.split('. ')[0]!.replace(/\.$/, '');
    const ambiguous = /^Option '(--[\w-]+)' argument is ambiguous/.exec(message);
    if (ambiguous) message = `${ambiguous[1]} needs a value; for one starting with "-" write ${ambiguous[1]}=<value>`;
    throw new UsageError(message, help);
  }
  if (!parsed.values.help && parsed.positionals.length > maxPositionals) {
    throw new UsageError(`unexpected argument "${parsed.positionals[maxPositionals]}"`, help);
  }
  return parsed;
}

export function required(p: Parsed, name: string, help: string): string {
  const v = p.values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`, help);
  return v;
}

export function positional(p: Parsed, index: number, what: string, help: string): string {
  const v = p.positionals[index];
  if (!v) throw new UsageError(`missing ${what}`, help);
  return v;
}

export function optionalString(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === 'string' ? v : undefined;
}

/** An integer flag; anything else is passed through as text so the schema names the problem. */
export function optionalInt(p: Parsed, name: string): number | string | undefined {
  const v = optionalString(p, name);
  if (v === undefined) return undefined;
  return /^-?\d+$/.test(v.trim()) ? Number(v) : v;
}

/** A comma-separated list flag; an empty value is the empty list. */
/** A number (fractions allowed); what is not one is passed on for the schema to refuse by name. */
export function optionalNumber(p: Parsed, name: string): number | string | undefined {
  const v = optionalString(p, name);
  if (v === undefined) return undefined;
  return /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v;
}

export function optionalList(p: Parsed, name: string): string[] | undefined {
  const v = optionalString(p, name);
  if (v === undefined) return undefined;
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}
