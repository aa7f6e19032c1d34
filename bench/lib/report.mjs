// The results: a table on the console, the JSON document, and the table in BENCHMARKS.md.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const MD_START = '<!-- bench:results:start -->';
export const MD_END = '<!-- bench:results:end -->';

const B6_LIMIT_MB = 250;

/** Whether a row meets its target (null when it has none or a figure is missing). */
export function met(row) {
  if (!row.target) return null;
  if (row.totalExact === false) return false;
  if ('minRatio' in row.target) return row.ratio === null ? null : row.ratio >= row.target.minRatio;
  if ('maxRatio' in row.target) return row.ratio === null ? null : row.ratio <= row.target.maxRatio;
  if ('max' in row.target) return row.platform === null || row.platform === undefined ? null : row.platform <= row.target.max;
  return null;
}

/** B6 is read off B1 and B3: the peak resident memory of the API and the dispatcher. */
export function b6Rows(scenarios) {
  const rows = [];
  for (const id of ['B1', 'B3']) {
    const s = scenarios.find((x) => x.id === id && x.rss);
    if (!s) continue;
    for (const part of ['api', 'dispatcher']) {
      if (s.rss[part] === undefined) continue;
      rows.push({ figure: `${part === 'api' ? 'API' : 'dispatcher'} peak RSS during ${id}`, unit: 'MB', platform: s.rss[part], baseline: null, ratio: null, target: { max: B6_LIMIT_MB } });
    }
  }
  return rows.length ? { id: 'B6', title: 'peak resident memory', rows } : null;
}

function targetText(t, unit) {
  if (!t) return '';
  if ('minRatio' in t) return `≥ ${t.minRatio} × ${t.of ?? 'raw'}`;
  if ('maxRatio' in t) return `≤ ${t.maxRatio} × ${t.of ?? 'raw'}`;
  return `≤ ${t.max} ${unit}`;
}

function fmt(v, unit) {
  if (v === null || v === undefined) return '—';
  const n = typeof v === 'number' ? (Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en') : String(Math.round(v * 100) / 100)) : String(v);
  return unit === 'ms' || unit === 'MB' || unit === 'KB' ? `${n} ${unit}` : n;
}

/** Table rows as arrays of cells (shared by the console and the markdown). */
export function tableRows(results) {
  const out = [];
  for (const s of results.scenarios) {
    if (s.error) {
      out.push([s.id, `failed: ${s.error.split('\n')[0].slice(0, 120)}`, '', '', '', '', '']);
      continue;
    }
    for (const r of s.rows) {
      const m = met(r);
      out.push([
        s.id,
        r.figure + (r.note ? ` (${r.note})` : ''),
        fmt(r.platform, r.unit),
        fmt(r.baseline, r.unit),
        r.ratio === null || r.ratio === undefined ? '—' : `${r.ratio} ×`,
        targetText(r.target, r.unit),
        m === null ? '' : m ? 'yes' : 'no',
      ]);
    }
    if (s.complete === false) out.push([s.id, 'did not complete within its time bound (figure from what completed)', '', '', '', '', '']);
  }
  return out;
}

const HEAD = ['#', 'Figure', 'Platform', 'Raw baseline', 'Ratio', 'Target', 'Met'];

export function consoleTable(results) {
  const rows = [HEAD, ...tableRows(results)];
  const widths = HEAD.map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  const line = (r) => r.map((c, i) => String(c).padEnd(widths[i])).join('  ');
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function markdownTable(results) {
  const h = results.host;
  const lines = [
    MD_START,
    `Last full run: ${results.finishedAt.slice(0, 10)} on ${h.cores} cores (${h.cpu}), ${h.memoryGiB} GiB memory, Node ${h.node}, ` +
      `PostgreSQL ${h.postgres}, Redis ${h.redis}; scale ${results.scale}. Ratio = platform ÷ raw baseline, measured in the same run.`,
    '',
    `| ${HEAD.join(' | ')} |`,
    `|${HEAD.map(() => '---').join('|')}|`,
    ...tableRows(results).map((r) => `| ${r.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`),
    MD_END,
  ];
  return lines.join('\n');
}

/** Replaces the text between the markers (appends a results section when they are missing). */
export function refreshMarkdown(file, results) {
  const table = markdownTable(results);
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const a = text.indexOf(MD_START);
  const b = text.indexOf(MD_END);
  const next = a >= 0 && b > a ? text.slice(0, a) + table + text.slice(b + MD_END.length) : `${text.trimEnd()}\n\n## Results\n\n${table}\n`;
  writeFileSync(file, next);
}

export function writeJson(file, results) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
}
