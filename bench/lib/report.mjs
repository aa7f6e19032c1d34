// The results: a table on the console, the JSON document, and the generated part of BENCHMARKS.md
// (between its markers: the run and its host, every figure with its raw baseline, and where the
// time goes: CPU by process, resident memory, B3's Postgres and B7's Redis work per item).
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

function targetText(t, unit, figure = '') {
  if (!t) return '';
  // a ratio to what the row's baseline column holds when its figure names it ("(baseline: without)")
  const of = t.of ?? (/\(baseline( column)?:/.test(figure) ? 'baseline' : 'raw');
  if ('minRatio' in t) return `≥ ${t.minRatio} × ${of}`;
  if ('maxRatio' in t) return `≤ ${t.maxRatio} × ${of}`;
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
        targetText(r.target, r.unit, r.figure),
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

const n0 = (v) => (v === null || v === undefined || Number.isNaN(v) ? '—' : Math.round(v).toLocaleString('en'));
/** CPU milliseconds: whole above 10, one decimal below (a small share still shows). */
const ms = (v) => (v === null || v === undefined || Number.isNaN(v) ? '—' : Math.abs(v) >= 10 ? n0(v) : String(Math.round(v * 10) / 10));
const cell = (c) => String(c).replace(/\|/g, '\\|');
const mdRow = (cells) => `| ${cells.map(cell).join(' | ')} |`;
const mdTable = (head, rows) => [mdRow(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(mdRow)];

/**
 * The columns of the CPU table: a process group of the meters (bench/lib/platform.mjs's
 * platformCpuMeter, the peers' and baselines' meters) → its column. Groups not named here go to
 * "other" with their name.
 */
const CPU_COLUMNS = [
  ['API', ['api']],
  ['dispatcher', ['dispatcher']],
  ['deliverer', ['deliverer']],
  ['robots / workers', ['agents', 'agents-2', 'workers']],
  ['Postgres backends', ['postgres']],
  ['of which autovacuum', ['autovacuum']],
  ['Postgres server', ['postgresServer']],
  ['Redis', ['redis']],
  ['load generator / client', ['load', 'producer']],
];
const OTHER_NAMES = { echo: 'echo server', robots: 'idle robots', bench: 'bench process', flooder: 'flooding robot' };

function cpuCells(groups, factor = 1) {
  const known = new Set(CPU_COLUMNS.flatMap(([, ks]) => ks));
  const val = (k) => (groups[k] === null || groups[k] === undefined ? null : groups[k] * factor);
  const cells = CPU_COLUMNS.map(([, ks]) => {
    const vs = ks.map(val).filter((v) => v !== null);
    return vs.length ? ms(vs.reduce((a, v) => a + v, 0)) : '—';
  });
  const other = Object.keys(groups).filter((k) => !known.has(k) && val(k) !== null).map((k) => `${OTHER_NAMES[k] ?? k} ${ms(val(k))}`);
  return [...cells, other.join(', ')];
}

const get = (o, ...keys) => keys.reduce((x, k) => (x === null || x === undefined ? undefined : x[k]), o);

/**
 * Where the CPU went, from what each scenario's details record: [id, what was measured, per,
 * groups (ms per `per`), factor]. Only figures the run recorded; a scenario that recorded none
 * (B4, B9) has no row.
 */
export function cpuRows(results) {
  const out = [];
  const add = (id, what, per, groups, factor = 1) => {
    if (groups && Object.values(groups).some((v) => v !== null && v !== undefined)) out.push({ id, what, per, groups, factor });
  };
  for (const s of results.scenarios) {
    const d = s.details;
    if (s.error || !d) continue;
    switch (s.id) {
      case 'B1':
        add('B1', 'platform', '1,000 requests', get(d, 'api', 'cpu', 'msPer1000'));
        add('B1', 'raw baseline (echo server)', '1,000 requests', get(d, 'baseline', 'cpu', 'msPer1000'));
        break;
      case 'B2':
        // the meters count per request of BULK items: shown per 1,000 items
        add('B2', 'platform', '1,000 items', get(d, 'api', 'cpu', 'msPer1000'), 1 / 1000);
        add('B2', 'raw baseline (its client; the backends are not metered)', '1,000 items', get(d, 'baseline', 'cpu', 'msPer1000'), 1 / 1000);
        break;
      case 'B3':
        add('B3', 'platform, agents as shipped', '1,000 completed items', get(d, 'cpu', 'msPer1000'));
        add('B3', 'platform, agents --prefetch 1', '1,000 completed items', get(d, 'prefetch1', 'cpu', 'msPer1000'));
        add('B3', 'platform with a webhook subscription', '1,000 completed items', get(d, 'webhook', 'cpu', 'msPer1000'));
        for (const [name, p] of Object.entries(d.peers ?? {})) add('B3', `peer: ${name}`, '1,000 completed jobs', get(p, 'cpu', 'msPer1000'));
        break;
      case 'B5':
        for (const [name, v] of Object.entries(d.variants ?? {})) add('B5', name, '1,000 requests', get(v, 'api', 'cpu', 'msPer1000'));
        break;
      case 'B7':
        for (const setup of d.setups ?? []) add('B7', setup.label, '1,000 completed items', get(d, 'pooled', setup.key, 'cpuMsPer1000Items'));
        break;
      case 'B8':
        add('B8', `${d.connected} idle robots, steady`, '1,000 heartbeats', d.cpuPer1000Heartbeats);
        add('B8', 'before the flood', 'second', get(d, 'flood', 'cpuMsPerSecondBefore'));
        add('B8', 'during the flood', 'second', get(d, 'flood', 'cpuMsPerSecondDuring'));
        break;
      case 'B10': {
        const added = get(d, 'adds', 'added');
        // its meter counts the autovacuum workers apart from the other backends: added back, as elsewhere
        const c = d.cpuMs;
        if (added && c) add('B10', 'the soak', '1,000 added items', { ...c, postgres: (c.postgres ?? 0) + (c.autovacuum ?? 0) }, 1000 / added);
        break;
      }
      case 'B11':
        add('B11', 'flood with the neighbour busy', '1,000 flood items', get(d, 'cpu', 'msPer1000'));
        break;
      default:
    }
  }
  return out;
}

/** Resident memory (MB) the run recorded, by process: peaks (VmHWM) and steady readings (VmRSS). */
export function memoryRows(results) {
  const out = [];
  for (const s of results.scenarios) {
    const d = s.details;
    if (s.error) continue;
    if ((s.id === 'B1' || s.id === 'B3') && s.rss) out.push([s.id, 'peak over the process\'s life (VmHWM)', n0(s.rss.api), n0(s.rss.dispatcher), n0(s.rss.agents)]);
    if (s.id === 'B8' && d) {
      out.push(['B8', 'before any robot connected (VmRSS)', n0(get(d, 'before', 'memory', 'rss')), '—', '—']);
      out.push(['B8', `${d.connected} idle robots, steady (VmRSS)`, n0(get(d, 'steady', 'memory', 'rss')), '—', '—']);
      out.push(['B8', 'peak through the flood (VmRSS sampled)', n0(get(d, 'flood', 'rssPeak')), '—', '—']);
    }
    if (s.id === 'B9' && d) {
      out.push(['B9', 'before the exports (VmRSS)', n0(d.rssBeforeMb), '—', '—']);
      out.push(['B9', 'highest 100 ms sample while exporting', n0(get(d, 'rssSamplesMb', 'max')), '—', '—']);
    }
  }
  return out;
}

/** B3's Postgres counters around a run, per completed item (WAL and checkpoints are server-wide). */
export function b3PostgresRows(results) {
  const s = results.scenarios.find((x) => x.id === 'B3' && !x.error && x.details);
  if (!s) return [];
  const d = s.details;
  const runs = [['agents as shipped', d], ['agents --prefetch 1', d.prefetch1], ['with a webhook subscription', d.webhook]];
  const out = [];
  for (const [what, r] of runs) {
    if (!r?.server || !r?.queueItems || !r.completed) continue;
    const per = (v, k = 1) => (v === null || v === undefined ? '—' : String(Math.round((v * k) / r.completed * 100) / 100));
    const q = r.queueItems;
    out.push([
      what, per(q.updates), q.updates ? `${Math.round((q.hotUpdates / q.updates) * 100)} %` : '—',
      n0(r.server.wal_bytes / r.completed), per(r.server.wal_records), per(r.server.wal_fpi, 1000),
      `${q.vacuum} + ${q.analyze}`, n0((r.server.checkpoints_timed ?? 0) + (r.server.checkpoints_req ?? 0)),
    ]);
  }
  return out;
}

/** B7's Redis commands per completed item, by set-up, with the commands that make most of them. */
export function b7RedisRows(results) {
  const s = results.scenarios.find((x) => x.id === 'B7' && !x.error && x.details);
  if (!s) return [];
  const top = (by, n = 4) => Object.entries(by ?? {}).sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${k} ${v}`).join(', ');
  const out = (s.details.setups ?? []).map((setup) => {
    const p = s.details.pooled?.[setup.key] ?? {};
    return [setup.label, p.commandsPerItem === null || p.commandsPerItem === undefined ? '—' : String(Math.round(p.commandsPerItem * 1000) / 1000), top(p.commandsPerItemBy)];
  });
  const m = s.details.memory;
  if (m) out.push(['idle platform (API, 1 dispatcher), per second', String(Math.round(m.idleCommandsPerSec * 10) / 10), top(m.idleCommandsPerSecBy)]);
  return out;
}

/** B10's retention statements by Postgres time (pg_stat_statements, when the server preloads it). */
export function b10StatementRows(results) {
  const s = results.scenarios.find((x) => x.id === 'B10' && !x.error && x.details);
  const st = s?.details?.postgres?.statements?.statements;
  if (!st?.length) return [];
  return st.slice(0, 6).map((r) => [`\`${r.query.replace(/`/g, "'")}\``, n0(r.calls), n0(r.rows), n0(r.ms)]);
}

function hostLine(results) {
  const h = results.host;
  const pg = h.postgresSettings ? ` (${Object.entries(h.postgresSettings).map(([k, v]) => `${k} ${v}`).join(', ')})` : '';
  const sec = results.startedAt && results.finishedAt ? (Date.parse(results.finishedAt) - Date.parse(results.startedAt)) / 1000 : null;
  const took = sec === null ? '' : sec < 120 ? `, ${Math.round(sec)} s` : `, ${Math.round(sec / 60)} min`;
  const full = results.fullRun ?? results.scale === 1;
  return [
    `Run: ${results.startedAt?.slice(0, 16).replace('T', ' ') ?? '?'} UTC${took}, scale ${results.scale}` +
      `${results.commit ? `, code of commit ${results.commit}` : ''}; scenarios ${(results.scenariosRun ?? []).join(', ')}${full ? '' : ' (NOT a full run)'}.`,
    `Host: ${h.cores} cores (${h.cpu}), ${h.memoryGiB} GiB memory, Node ${h.node}, PostgreSQL ${h.postgres}${pg}, Redis ${h.redis}.`,
  ];
}

/** The generated part of BENCHMARKS.md, markers included. */
export function markdownSection(results) {
  const lines = [
    MD_START,
    '<!-- written by `npm run bench` (bench/lib/report.mjs) after a full run: edits between these markers are overwritten -->',
    ...hostLine(results),
    '',
    '### Figures',
    '',
    ...mdTable(HEAD, tableRows(results)),
  ];
  const cpu = cpuRows(results);
  if (cpu.length) {
    lines.push('', '### CPU by process (ms per the unit of "Per")', '');
    lines.push(...mdTable(['#', 'Measured', 'Per', ...CPU_COLUMNS.map(([name]) => name), 'other'], cpu.map((r) => [r.id, r.what, r.per, ...cpuCells(r.groups, r.factor)])));
  }
  const mem = memoryRows(results);
  if (mem.length) lines.push('', '### Resident memory (MB)', '', ...mdTable(['#', 'When', 'API', 'dispatcher', 'robots'], mem));
  const pg = b3PostgresRows(results);
  if (pg.length) {
    lines.push('', '### B3: Postgres per completed item', '');
    lines.push(...mdTable(['Run', 'queue_items updates', 'of which HOT', 'WAL bytes', 'WAL records', 'full-page images per 1,000', 'autovacuum + autoanalyze rounds (queue_items)', 'checkpoints'], pg));
  }
  const redis = b7RedisRows(results);
  if (redis.length) lines.push('', '### B7: Redis commands per completed item', '', ...mdTable(['Set-up', 'Commands', 'Most of them'], redis));
  const st = b10StatementRows(results);
  if (st.length) lines.push('', '### B10: retention statements by Postgres time', '', ...mdTable(['Statement', 'Calls', 'Rows', 'ms'], st));
  lines.push(MD_END);
  return lines.join('\n');
}

/** Kept for callers of the table alone. */
export const markdownTable = markdownSection;

/** Replaces the text between the markers (appends a results section when they are missing). */
export function refreshMarkdown(file, results) {
  const section = markdownSection(results);
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const a = text.indexOf(MD_START);
  const b = text.indexOf(MD_END);
  const next = a >= 0 && b > a ? text.slice(0, a) + section + text.slice(b + MD_END.length) : `${text.trimEnd()}\n\n## Results\n\n${section}\n`;
  writeFileSync(file, next);
}

export function writeJson(file, results) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
}
