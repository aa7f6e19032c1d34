import { MAX_JSON_DEPTH, ValidationError, jsonInputIssue, jsonTextMayHoldUnstorable, printableText, textProblem } from '@svc/core';
import { assertJsonInput } from '@svc/core/internals';

/** `levels` arrays or objects inside each other, innermost empty. */
function nested(levels: number, kind: 'array' | 'object' = 'object'): unknown {
  let value: unknown = kind === 'array' ? [] : {};
  for (let i = 1; i < levels; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
}

describe('text Postgres can store', () => {
  it('refuses U+0000 and unpaired surrogates, and keeps pairs, other controls and U+FFFD', () => {
    expect(textProblem('a\u0000b')).toBe('nul');
    expect(textProblem('\ud800')).toBe('lone_surrogate');
    expect(textProblem('x\udc00')).toBe('lone_surrogate');
    expect(textProblem('\ud83d')).toBe('lone_surrogate');
    expect(textProblem('\ude00\ud83d')).toBe('lone_surrogate');
    expect(textProblem('\ud83d\ude00 ok')).toBeNull();
    expect(textProblem('\u0001\t\ufffd é 日本')).toBeNull();
    expect(textProblem('')).toBeNull();
  });

  it('shows refused characters of a name as escapes and leaves the rest', () => {
    expect(printableText('a\u0000b\ud800\ud83d\ude00')).toBe('a\\u0000b\\ud800\ud83d\ude00');
    expect(printableText('plain')).toBe('plain');
  });

  it('tells from the JSON text alone whether a string may hold one', () => {
    expect(jsonTextMayHoldUnstorable('{"a":"\\u0000"}')).toBe(true);
    expect(jsonTextMayHoldUnstorable('{"a":"\\uD800"}')).toBe(true);
    expect(jsonTextMayHoldUnstorable('{"a":"\\udfff"}')).toBe(true);
    expect(jsonTextMayHoldUnstorable('{"a":"\\u00e9 \\u2028"}')).toBe(false);
    expect(jsonTextMayHoldUnstorable('{"a":"\u00e9"}')).toBe(false);
  });
});

describe('jsonInputIssue', () => {
  it('passes ordinary JSON, however wide', () => {
    const wide = { items: Array.from({ length: 5000 }, (_, i) => ({ n: i, s: `v${i}`, e: '\ud83d\ude00', z: null })) };
    expect(jsonInputIssue(wide, ['body'])).toBeNull();
    expect(jsonInputIssue('text', ['body'])).toBeNull();
    expect(jsonInputIssue(42, ['body'])).toBeNull();
    expect(jsonInputIssue(null, ['body'])).toBeNull();
  });

  it('names the string holding U+0000 or a lone surrogate, in objects and arrays', () => {
    expect(jsonInputIssue({ data: { x: [1, 'a\u0000'] } }, ['body'])).toEqual({
      field: 'body → data → x → 1',
      loc: ['body', 'data', 'x', 1],
      message: 'no puede contener el carácter nulo (U+0000)',
      type: 'text_nul',
    });
    expect(jsonInputIssue({ items: [{}, { name: '\udc00' }] }, ['body'])).toMatchObject({
      field: 'body → items → 1 → name',
      type: 'text_lone_surrogate',
    });
    expect(jsonInputIssue('\u0000', ['query', 'q'])).toMatchObject({ field: 'query → q', type: 'text_nul' });
  });

  it('names an object key holding one, with the character escaped', () => {
    expect(jsonInputIssue({ data: { 'k\ud800': 1 } }, ['body'])).toEqual({
      field: 'body → data → k\\ud800',
      loc: ['body', 'data', 'k\\ud800'],
      message: 'el nombre del campo no puede contener un carácter sustituto UTF-16 sin pareja (U+D800 a U+DFFF)',
      type: 'key_lone_surrogate',
    });
    expect(jsonInputIssue({ '\u0000': 'v' }, ['body'])).toMatchObject({ field: 'body → \\u0000', type: 'key_nul' });
  });

  it('refuses a __proto__ key anywhere', () => {
    const value = JSON.parse('{"data":[{"__proto__":{"polluted":true}}]}') as unknown;
    expect(jsonInputIssue(value, ['body'])).toMatchObject({ field: 'body → data → 0 → __proto__', type: 'key_forbidden' });
  });

  it(`accepts ${MAX_JSON_DEPTH} levels and refuses one more, naming where`, () => {
    expect(MAX_JSON_DEPTH).toBe(64);
    expect(jsonInputIssue(nested(MAX_JSON_DEPTH), ['body'])).toBeNull();
    expect(jsonInputIssue(nested(MAX_JSON_DEPTH, 'array'), ['body'])).toBeNull();
    const issue = jsonInputIssue(nested(MAX_JSON_DEPTH + 1), ['body']);
    expect(issue).toMatchObject({ type: 'json_too_deep', message: `no puede anidar objetos o listas a más de ${MAX_JSON_DEPTH} niveles` });
    expect(issue!.loc).toEqual(['body', ...Array<string>(MAX_JSON_DEPTH).fill('a')]);
    expect(jsonInputIssue(nested(MAX_JSON_DEPTH + 1, 'array'), ['body'])).toMatchObject({ type: 'json_too_deep' });
  });

  it('walks 10,000 levels (objects and arrays) without overflowing the stack', () => {
    expect(jsonInputIssue(nested(10_000), ['body'])).toMatchObject({ type: 'json_too_deep' });
    expect(jsonInputIssue(nested(10_000, 'array'), ['body'])).toMatchObject({ type: 'json_too_deep' });
  });

  it('reports the first issue in document order', () => {
    expect(jsonInputIssue({ a: { b: 'ok', c: '\u0000' }, d: '\ud800' }, ['body'])).toMatchObject({ field: 'body → a → c' });
    expect(jsonInputIssue([nested(MAX_JSON_DEPTH - 1), 'x\u0000'], ['body'])).toMatchObject({ field: 'body → 1', type: 'text_nul' });
  });

  it('skips the string checks when told the text holds no suspect escape, but never depth or __proto__', () => {
    expect(jsonInputIssue({ a: '\u0000' }, ['body'], { strings: false })).toBeNull();
    expect(jsonInputIssue({ a: nested(MAX_JSON_DEPTH) }, ['body'], { strings: false })).toMatchObject({ type: 'json_too_deep' });
    expect(jsonInputIssue(JSON.parse('{"__proto__":1}'), ['body'], { strings: false })).toMatchObject({ type: 'key_forbidden' });
  });

  it('assertJsonInput throws the issue as a 422 ValidationError', () => {
    expect(() => assertJsonInput({ a: '\u0000' }, ['body'])).toThrow(ValidationError);
    try {
      assertJsonInput({ a: '\u0000' }, ['body']);
    } catch (err) {
      expect((err as ValidationError).status).toBe(422);
      expect((err as ValidationError).details).toEqual([{ field: 'body → a', message: 'no puede contener el carácter nulo (U+0000)' }]);
    }
    expect(() => assertJsonInput({ a: 'fine' }, ['body'])).not.toThrow();
  });
});
