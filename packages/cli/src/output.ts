import type { CliIo } from './io';

/** How a command prints: one JSON document for scripts, or text for people. */
export interface Output {
  json: boolean;
  /** The machine-readable result (printed only with --json). */
  result(value: unknown): void;
  /** Text for people (printed only without --json). */
  text(lines: string | string[]): void;
  /** A note on stderr in both modes (never mixed into JSON on stdout). */
  note(line: string): void;
}

export function createOutput(io: CliIo, json: boolean): Output {
  return {
    json,
    result: (value) => {
      if (json) io.stdout(`${JSON.stringify(value, null, 2)}\n`);
    },
    text: (lines) => {
      if (!json) io.stdout(`${(Array.isArray(lines) ? lines : [lines]).join('\n')}\n`);
    },
    note: (line) => io.stderr(`${line}\n`),
  };
}

function show(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length ? value.map(show).join(', ') : '(none)';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** `title` then aligned `key  value` lines. */
export function record(title: string, fields: Record<string, unknown>): string[] {
  const width = Math.max(...Object.keys(fields).map((k) => k.length));
  return [title, ...Object.entries(fields).map(([k, v]) => `  ${k.padEnd(width)}  ${show(v)}`)];
}

/** A plain text table with a header row. */
export function table(columns: string[], rows: unknown[][]): string[] {
  const cells = rows.map((r) => r.map(show));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)];
}
