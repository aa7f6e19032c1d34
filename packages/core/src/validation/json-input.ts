import type { FieldIssue } from '../errors';
import { ValidationError } from '../errors';
import { es } from '../messages/server-messages';

/**
 * The deepest nesting of objects and arrays a request may send, counted from the top of the
 * value (a body `{"data": {}}` is 2 deep). Everything that later walks client JSON recursively —
 * Postgres jsonb (its stack-depth limit), JSON serialisation, schema validation, hashing — can
 * rely on this bound (docs/decisions/hostile-input.md).
 */
export const MAX_JSON_DEPTH = 64;

/** Why a text cannot be stored: Postgres text and jsonb refuse U+0000 and unpaired UTF-16 halves. */
export type TextProblem = 'nul' | 'lone_surrogate';

// one native scan finds the suspects; only a string that has one is looked at character by character
const SUSPECT = /[\u0000\ud800-\udfff]/;

/** What makes `text` unstorable, or null when Postgres can store it (the common case: one regex test). */
export function textProblem(text: string): TextProblem | null {
  if (!SUSPECT.test(text)) return null;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return 'nul';
    if (c < 0xd800 || c > 0xdfff) continue;
    // a high half followed by a low half is one character (an emoji, say): fine
    if (c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      i++;
      continue;
    }
    return 'lone_surrogate';
  }
  return null;
}

const TEXT_MESSAGES: Record<TextProblem, string> = {
  nul: es.validation.nulCharacter,
  lone_surrogate: es.validation.loneSurrogate,
};

/** The 422 issue for a text value at `loc` (`['query', 'status']`, `['body', 'data', 'x']`). */
export function textIssue(loc: Array<string | number>, problem: TextProblem): FieldIssue {
  return issue(loc, TEXT_MESSAGES[problem], `text_${problem}`);
}

// a JSON text can carry U+0000 or a surrogate only as a `\u` escape: raw control characters are
// invalid JSON, and decoding UTF-8 turns bytes that are no character into U+FFFD
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/**
 * False when the JSON text `text` cannot hold an unstorable string (no `\u0000`, no `\uD800`–
 * `\uDFFF` escape): its parsed value may then be checked with `{ strings: false }`. One native
 * scan of the text, cheaper than testing every string of the value.
 */
export function jsonTextMayHoldUnstorable(text: string): boolean {
  return SUSPECT_ESCAPE.test(text);
}

/**
 * The first thing in a parsed JSON value that a request may not carry, as a 422 issue whose
 * path starts at `root` (e.g. `['body']`), or null:
 * - U+0000 or an unpaired surrogate in any string or object key (Postgres cannot store them);
 *   skipped with `strings: false` (see jsonTextMayHoldUnstorable);
 * - nesting deeper than MAX_JSON_DEPTH;
 * - a `__proto__` key (JSON.parse makes it an ordinary property, but a later copy of the object
 *   by assignment would change the copy's prototype).
 *
 * Iterative, so 10,000 levels of input cannot overflow the stack. The common case, nothing
 * wrong, is one walk that keeps no paths; only when it finds something does a second walk find
 * where (paths show refused characters of a key as `\uXXXX` escapes).
 */
export function jsonInputIssue(value: unknown, root: Array<string | number>, options: { strings?: boolean } = {}): FieldIssue | null {
  const strings = options.strings ?? true;
  if (typeof value === 'string') {
    const problem = strings ? textProblem(value) : null;
    return problem ? textIssue(root, problem) : null;
  }
  if (value === null || typeof value !== 'object' || isClean(value, strings)) return null;
  return locate(value, root, strings);
}

/**
 * The fast walk: true when nothing in `value` is refused. Array elements and object values are
 * visited by the same few lines written twice rather than through a helper: this runs for every
 * value of every request body (B1, B2), where a helper would add a function call per value.
 */
function isClean(value: object, strings: boolean): boolean {
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        if (typeof child === 'string') {
          if (strings && SUSPECT.test(child)) return false;
        } else if (child !== null && typeof child === 'object') {
          if (depth >= MAX_JSON_DEPTH) return false;
          nodes.push(child);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    for (const key in node) {
      if (key === '__proto__' || (strings && SUSPECT.test(key))) return false;
      const child: unknown = (node as Record<string, unknown>)[key];
      if (typeof child === 'string') {
        if (strings && SUSPECT.test(child)) return false;
      } else if (child !== null && typeof child === 'object') {
        if (depth >= MAX_JSON_DEPTH) return false;
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return true;
}

/** The slow walk, in document order with the path at hand: the first issue, or null. */
function locate(value: object, root: Array<string | number>, strings: boolean): FieldIssue | null {
  const stack: Frame[] = [frameOf(value)];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.next === top.size) {
      stack.pop();
      continue;
    }
    const i = top.next++;
    let child: unknown;
    if (top.keys === null) {
      child = (top.node as unknown[])[i];
    } else {
      const key = top.keys[i]!;
      const problem = strings ? textProblem(key) : null;
      if (problem) return issue(pathOf(root, stack), es.validation.fieldName(TEXT_MESSAGES[problem]), `key_${problem}`);
      if (key === '__proto__') return issue(pathOf(root, stack), es.validation.fieldNameForbidden, 'key_forbidden');
      child = (top.node as Record<string, unknown>)[key];
    }
    if (typeof child === 'string') {
      const problem = strings ? textProblem(child) : null;
      if (problem) return textIssue(pathOf(root, stack), problem);
    } else if (child !== null && typeof child === 'object') {
      if (stack.length >= MAX_JSON_DEPTH) {
        return issue(pathOf(root, stack), es.validation.nestedTooDeep(MAX_JSON_DEPTH), 'json_too_deep');
      }
      stack.push(frameOf(child));
    }
  }
  return null;
}

/** Throws the 422 of `jsonInputIssue`, if any. */
export function assertJsonInput(value: unknown, root: Array<string | number>, options: { strings?: boolean } = {}): void {
  const found = jsonInputIssue(value, root, options);
  if (found) throw new ValidationError([found]);
}

interface Frame {
  node: object;
  /** null for an array */
  keys: string[] | null;
  size: number;
  /** index of the next element to visit; the one being visited is next - 1 */
  next: number;
}

function frameOf(node: object): Frame {
  if (Array.isArray(node)) return { node, keys: null, size: node.length, next: 0 };
  const keys = Object.keys(node);
  return { node, keys, size: keys.length, next: 0 };
}

/** The path of the element being visited in the innermost frame. */
function pathOf(root: Array<string | number>, stack: Frame[]): Array<string | number> {
  const loc = [...root];
  for (const f of stack) loc.push(f.keys === null ? f.next - 1 : printableText(f.keys[f.next - 1]!));
  return loc;
}

/** A text as it can be shown in a field path (and logged): refused characters as `\uXXXX`. */
export function printableText(key: string): string {
  if (textProblem(key) === null) return key;
  let out = '';
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < key.length && (key.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (pair) {
      out += key[i]! + key[i + 1]!;
      i++;
    } else if (c === 0 || (c >= 0xd800 && c <= 0xdfff)) {
      out += `\\u${c.toString(16).padStart(4, '0')}`;
    } else {
      out += key[i]!;
    }
  }
  return out;
}

function issue(loc: Array<string | number>, message: string, type: string): FieldIssue {
  return { field: loc.join(' → '), message, loc, type };
}
