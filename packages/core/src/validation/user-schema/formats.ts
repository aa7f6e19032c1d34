import type Ajv from 'ajv';
import type { Format, FormatDefinition } from 'ajv';
import addFormats from 'ajv-formats';
import { fullFormats } from 'ajv-formats/dist/formats';

/**
 * ajv-formats checks `format` with native regular expressions (and `regex` compiles the value as
 * one). They are fixed, not admin-supplied, but their cost grows with the value: `url` is
 * quadratic in its length, the date-time family and `regex` linear with a large cost per
 * character. One value longer than its format could ever legitimately be is refused
 * before the expression runs, so a single check stays within milliseconds; the validation budget
 * bounds how many run. Numbers and reasons: docs/decisions/admin-schemas.md.
 */
export const DEFAULT_FORMAT_MAX_LENGTH = 65_536;
export const FORMAT_MAX_LENGTH: Readonly<Record<string, number>> = {
  date: 256, time: 256, 'date-time': 256, 'iso-time': 256, 'iso-date-time': 256, duration: 256,
  url: 2_048,
  regex: 4_096,
  // base64 payloads may be as large as the body; the check is one linear pass, cheap per character
  byte: Infinity,
};

type StringCheck = (s: string) => boolean;

function asCheck(validate: RegExp | StringCheck): StringCheck {
  return typeof validate === 'function' ? validate : (s) => validate.test(s);
}

function capped(format: Format, max: number): Format {
  if (typeof format === 'boolean' || max === Infinity) return format;
  if (format instanceof RegExp || typeof format === 'function') {
    const check = asCheck(format as RegExp | StringCheck);
    return { type: 'string', validate: (s: string) => s.length <= max && check(s) };
  }
  const def = format as FormatDefinition<string>;
  if ((def.type ?? 'string') !== 'string' || def.async) return format;
  const check = asCheck(def.validate as RegExp | StringCheck);
  return { ...def, type: 'string', validate: (s: string) => s.length <= max && check(s) };
}

/** ajv-formats (formats and the formatMinimum/… keywords), each string format cut off at its length. */
export function addCappedFormats(ajv: Ajv): void {
  addFormats(ajv);
  for (const [name, format] of Object.entries(fullFormats)) {
    ajv.addFormat(name, capped(format, FORMAT_MAX_LENGTH[name] ?? DEFAULT_FORMAT_MAX_LENGTH));
  }
}
