import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { es } from '@svc/core';

/**
 * Every server text a person reads lives in one catalogue,
 * packages/core/src/messages/server-messages.ts (docs/architecture.md). This scan reads the
 * sources of core, the API, the dispatcher and the CLI (not their tests, not the console, which
 * has its own catalogue, not the catalogue itself) and fails on a string or template literal
 * that looks like Spanish text.
 *
 * "Looks like Spanish" is a heuristic, not a proof: a letter only Spanish uses here
 * (áéíóúñ¿¡), or, in a text with a space, one of a few Spanish words English code does not use. Markdown code spans
 * (`…`) are left out first: the API's English OpenAPI descriptions quote messages that way.
 * The agent (packages/agent) is not scanned: it runs on the robots, does not depend on core,
 * and writes one text of its own (a timed-out run's message, the same words as the catalogue's
 * jobs.timedOut).
 */
const ROOT = path.resolve(__dirname, '..');
const SCANNED = ['packages/core/src', 'apps/api/src', 'apps/dispatcher/src', 'packages/cli/src'];
const CATALOGUE = 'packages/core/src/messages/server-messages.ts';

/** Files whose literals are left where they are for now, and why. */
const SKIPPED_FILES: Record<string, string> = {
  [CATALOGUE]: 'the catalogue itself',
};

/** Single literals that look Spanish but are no server message: file, the literal's text, why. */
const ALLOWED: Array<{ file: string; text: string; why: string }> = [];

const SPANISH_LETTER = /[áéíóúñÁÉÍÓÚÑ¿¡]/;
const SPANISH_WORD = new RegExp(
  '(?:^|[^\\p{L}\\p{N}_$])(?:' +
    [
      'el', 'la', 'las', 'los', 'del', 'una', 'es', 'se', 'ya', 'y', 'que', 'para', 'por', 'con', 'puede', 'debe', 'deben',
      'hay', 'solo', 'este', 'esta', 'existe', 'requiere', 'inválid[oa]s?', 'encontrad[oa]s?', 'desconocid[oa]s?',
      'expirad[oa]s?', 'agotad[oa]s?', 'demasiad[oa]s?', 'admitid[oa]s?', 'permitid[oa]s?', 'insuficientes?', 'leer',
    ].join('|') +
    ')(?=$|[^\\p{L}\\p{N}_$])',
  'iu',
);

/** Does `text` look like a Spanish text a person reads? */
export function looksSpanish(text: string): boolean {
  const prose = text.replace(/`[^`]*`/g, ' ');
  return SPANISH_LETTER.test(prose) || (/\s/.test(prose) && SPANISH_WORD.test(prose));
}

/** The text of every string and template literal of a file (a template's parts joined by `${…}`), with its line. */
export function literals(file: string, source: string): Array<{ text: string; line: number }> {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: Array<{ text: string; line: number }> = [];
  const visit = (node: ts.Node): void => {
    let text: string | null = null;
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) return;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) text = node.text;
    else if (ts.isTemplateExpression(node)) text = node.head.text + node.templateSpans.map((s) => '${…}' + s.literal.text).join('');
    if (text !== null) found.push({ text, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1 });
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(ROOT, dir))) {
    const rel = `${dir}/${name}`;
    if (statSync(path.join(ROOT, rel)).isDirectory()) out.push(...sourceFiles(rel));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every string leaf of the catalogue, functions called with placeholder arguments. */
function catalogueTexts(node: unknown, out: string[] = []): string[] {
  if (typeof node === 'string') out.push(node);
  else if (typeof node === 'function') out.push(String((node as (...a: string[]) => unknown)('X', 'Y', 'Z')));
  else if (node && typeof node === 'object') for (const v of Object.values(node)) catalogueTexts(v, out);
  return out;
}

describe('server messages live in one catalogue', () => {
  const files = SCANNED.flatMap(sourceFiles);
  const scanned = files.filter((f) => !(f in SKIPPED_FILES));
  const hits = scanned.flatMap((file) =>
    literals(file, readFileSync(path.join(ROOT, file), 'utf8'))
      .filter((l) => looksSpanish(l.text))
      .map((l) => ({ file, ...l })),
  );
  const texts = catalogueTexts(es).filter((t) => t !== es.locale);

  it('reads a plausible set of files, and a non-empty catalogue', () => {
    expect(scanned.length).toBeGreaterThan(150);
    for (const root of SCANNED) expect(scanned.some((f) => f.startsWith(`${root}/`))).toBe(true);
    for (const f of Object.keys(SKIPPED_FILES)) expect(files).toContain(f);
    expect(texts.length).toBeGreaterThan(150);
    expect(texts.every((t) => t.length > 0)).toBe(true);
  });

  it('has a heuristic that recognises the catalogue\'s own texts and no English', () => {
    const recognised = texts.filter(looksSpanish);
    // some short texts carry none of the signs ('Error HTTP', 'subesquemas'): the heuristic's blind spot
    expect(recognised.length / texts.length).toBeGreaterThan(0.9);
    for (const english of ['job SLA breached', 'unknown dispatch job', 'webhook subscription disabled after failing too long',
      'Illegal job transition ${…} → ${…}', 'DATABASE_POOLER=transaction needs DATABASE_DIRECT_URL', 'Queue name (unique per workspace)']) {
      expect(looksSpanish(english)).toBe(false);
    }
  });

  it('finds no Spanish literal outside the catalogue', () => {
    const unexplained = hits.filter((h) => !ALLOWED.some((a) => a.file === h.file && a.text === h.text));
    expect(unexplained.map((h) => `${h.file}:${h.line}: ${JSON.stringify(h.text.slice(0, 120))}`)).toEqual([]);
  });

  it('allows nothing that is not there any more', () => {
    const stale = ALLOWED.filter((a) => !hits.some((h) => h.file === a.file && h.text === a.text));
    expect(stale).toEqual([]);
  });
});
