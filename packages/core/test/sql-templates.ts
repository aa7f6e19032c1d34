import { readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * Source scanning for the tests of the state machines (job-transitions.test.ts,
 * status-tables.test.ts): the SQL templates of the sources, to find status literals written in
 * statements that update a table with a transition table.
 */

/**
 * The SQL templates of a TypeScript source: the static text of every template literal, with the
 * text of templates nested in its `${…}` (conditional fragments) inlined where they stand. A
 * small tokenizer, enough for this repository's sources: it skips comments, quoted strings and
 * regular expression literals, whose backticks and quotes are not SQL.
 */
export function sqlTemplates(src: string): Array<{ line: number; text: string }> {
  const found: Array<{ line: number; text: string }> = [];
  let i = 0;
  const lineAt = (at: number) => src.slice(0, at).split('\n').length;

  // code until `end` (a closing `}` of an interpolation when `inInterpolation`); returns the text
  // of the templates met on the way
  function code(inInterpolation: boolean): string {
    let depth = 0;
    let nested = '';
    let prev = '';
    while (i < src.length) {
      const c = src[i]!;
      const n = src[i + 1];
      if (c === '/' && n === '/') { while (i < src.length && src[i] !== '\n') i++; continue; }
      if (c === '/' && n === '*') { i = src.indexOf('*/', i + 2) + 2; continue; }
      if (c === "'" || c === '"') {
        i++;
        while (i < src.length && src[i] !== c) i += src[i] === '\\' ? 2 : 1;
        i++; prev = c; continue;
      }
      if (c === '/' && (prev === '' || '(,=:[!&|?{};'.includes(prev))) {
        // a regular expression literal
        i++;
        let inClass = false;
        while (i < src.length && (inClass || src[i] !== '/')) {
          if (src[i] === '\\') i++;
          else if (src[i] === '[') inClass = true;
          else if (src[i] === ']') inClass = false;
          i++;
        }
        i++; prev = '/'; continue;
      }
      if (c === '`') {
        const start = i;
        i++;
        const text = template();
        found.push({ line: lineAt(start), text });
        nested += text;
        prev = '`'; continue;
      }
      if (c === '{') depth++;
      if (c === '}') {
        if (inInterpolation && depth === 0) { i++; return nested; }
        depth--;
      }
      if (!/\s/.test(c)) prev = c;
      i++;
    }
    return nested;
  }

  // inside a template, after its opening backtick; returns its static text
  function template(): string {
    let text = '';
    while (i < src.length) {
      const c = src[i]!;
      if (c === '\\') { text += src.slice(i, i + 2); i += 2; continue; }
      if (c === '`') { i++; return text; }
      if (c === '$' && src[i + 1] === '{') {
        i += 2;
        text += ' ' + code(true) + ' ';
        continue;
      }
      text += c;
      i++;
    }
    return text;
  }

  code(false);
  return found;
}

/** The .ts sources under a directory (tests and declarations excluded). */
export function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'test' ? [] : sources(p);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}
