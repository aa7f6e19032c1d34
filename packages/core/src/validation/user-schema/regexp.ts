import type { RegExpEngine, RegExpLike } from 'ajv/dist/types';
import { RE2JS } from 're2js';
import { es } from '../../messages/server-messages';

/**
 * Admin-supplied `pattern` / `patternProperties` run on RE2 (re2js, a pure-JS port): matching is
 * linear in the input whatever the pattern, so a nested quantifier cannot stall the API. Patterns
 * are written in ECMAScript syntax (as JSON Schema says) and translated; what RE2 cannot do in
 * linear time (backreferences, lookaround) is refused when the schema is saved.
 * See docs/decisions/admin-schemas.md.
 */

/** Longest pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 512;
/** RE2's own measure of a compiled pattern's cost (instructions); `a{1000}` is about 1,000. */
export const MAX_PATTERN_PROGRAM_SIZE = 4_000;

function compileRe2(pattern: string): RE2JS {
  return RE2JS.compile(RE2JS.translateRegExp(pattern));
}

/** Spanish reason why `pattern` cannot be used, or null when RE2 accepts it within the limits. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return es.validation.patternTooLong(pattern.length, MAX_PATTERN_LENGTH);
  }
  let compiled: RE2JS;
  try {
    compiled = compileRe2(pattern);
  } catch (err) {
    if (/\(\?<?[=!]/.test(pattern)) return es.validation.patternLookaround;
    if (/\\[1-9]|\\k</.test(pattern)) return es.validation.patternBackreference;
    return es.validation.patternSyntax((err as Error).message);
  }
  const size = compiled.programSize();
  if (size > MAX_PATTERN_PROGRAM_SIZE) {
    return es.validation.patternTooComplex(size, MAX_PATTERN_PROGRAM_SIZE);
  }
  return null;
}

/**
 * ajv's `code.regExp` contract: called as `regExp(pattern, flags)` when a schema is compiled, the
 * result's `.test(string)` is called while validating, and `String(result)` keys ajv's de-duplication
 * of patterns (so it must differ between patterns). Flags are ignored: ajv only passes "u", and
 * RE2 always matches by code point.
 */
export const re2Engine: RegExpEngine = Object.assign(
  (pattern: string): RegExpLike => {
    const compiled = compileRe2(pattern);
    const like: RegExpLike & { toString(): string } = { test: (s: string) => compiled.test(s), toString: () => `re2:${pattern}` };
    return like;
  },
  // only used by ajv's standalone code generation, which user schemas never go through
  { code: 'require("re2js").RE2JS' },
);
