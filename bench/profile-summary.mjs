// Summarises a V8 .cpuprofile (from `npm run bench -- --profile api`): self time by function and
// by package/file, and total (inclusive) time of the functions that matter.
//   node bench/profile-summary.mjs <file.cpuprofile> [--top 30] [--match text] [--callers fn] [--categories]
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const file = args[0];
const top = Number(args[args.indexOf('--top') + 1] || 30) || 30;
const match = args.includes('--match') ? args[args.indexOf('--match') + 1] : null;
const prof = JSON.parse(readFileSync(file, 'utf8'));

const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// self time per node from samples and time deltas
const self = new Map();
for (let i = 0; i < prof.samples.length; i++) {
  const dt = prof.timeDeltas[i + 1] ?? 0;
  self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + dt);
}
const total = [...self.values()].reduce((a, b) => a + b, 0);

function where(cf) {
  const url = cf.url || '';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.includes('/packages/core/')) return 'core:' + url.split('/packages/core/dist/')[1];
  if (url.includes('/apps/')) return 'app:' + url.split('/apps/')[1];
  if (url.startsWith('node:')) return url;
  return url ? url.split('/').slice(-2).join('/') : `(${cf.functionName || 'native'})`;
}
const label = (cf) => `${cf.functionName || '(anonymous)'} ${where(cf)}:${cf.lineNumber + 1}`;

const selfByFn = new Map();
const selfByWhere = new Map();
for (const [id, t] of self) {
  const cf = byId.get(id).callFrame;
  selfByFn.set(label(cf), (selfByFn.get(label(cf)) ?? 0) + t);
  selfByWhere.set(where(cf), (selfByWhere.get(where(cf)) ?? 0) + t);
}

// inclusive time: each sample counts once for every distinct function on its stack
const incl = new Map();
for (const [id, t] of self) {
  const seen = new Set();
  for (let n = id; n !== undefined; n = parent.get(n)) {
    const l = label(byId.get(n).callFrame);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + t);
  }
}

const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
const show = (title, map, n = top, filter = () => true) => {
  console.log(`\n${title}`);
  for (const [k, t] of [...map].filter(([k]) => filter(k)).sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${pct(t)}  ${k}`);
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
show('self time by package / file', selfByWhere, top);
show('self time by function', selfByFn, top);
show('inclusive time by function', incl, top, (k) => !match || k.includes(match));

// --callers NAME: the stacks (3 frames up) that lead to a function, by self time
if (args.includes('--callers')) {
  const name = args[args.indexOf('--callers') + 1];
  const stacks = new Map();
  for (const [id, t] of self) {
    if ((byId.get(id).callFrame.functionName || '') !== name) continue;
    const frames = [];
    for (let n = parent.get(id); n !== undefined && frames.length < 6; n = parent.get(n)) {
      const cf = byId.get(n).callFrame;
      if (/^node:internal|^node:net|^node:events|^node:_stream/.test(where(cf))) continue;
      frames.push(label(cf));
    }
    const k = frames.join(' ← ');
    stacks.set(k, (stacks.get(k) ?? 0) + t);
  }
  show(`callers of ${name}`, stacks, 12);
}

// --categories: each sample goes to the first owner found walking up its stack (BENCHMARKS.md)
if (args.includes('--categories')) {
  const owners = [
    ['logging (winston)', /winston|logform|safe-stable-stringify|winston-transport|request-context/],
    ['rate limit (rate-limiter-flexible, ioredis)', /rate-limiter-flexible|rate-limit\.js|ioredis/],
    ['postgres client', /node_modules\/postgres\//],
    ['bullmq', /bullmq/],
    ['API key auth', /auth\/api-key|security\/hash/],
    ['body parsing', /koa-bodyparser|co-body|raw-body|inflation|bourne|http\/body|json-input/],
    ['validation (ajv)', /ajv|validation\//],
    ['queue items, batching', /queue-items\/|db\/batcher/],
    ['idempotency', /idempotency/],
    ['koa, router', /node_modules\/koa\/|@koa\/router|koa-compose|delegates|only|type-is|on-finished|http\/route|routes\//],
    ['node I/O (HTTP, sockets, streams)', /node:_http|node:net|stream_base|node:internal\/streams/],
  ];
  const cat = new Map();
  for (const [id, t] of self) {
    const fn = byId.get(id).callFrame.functionName;
    let name = ['(idle)', '(garbage collector)', '(program)'].includes(fn) ? fn : null;
    for (let n = id; n !== undefined && !name; n = parent.get(n)) {
      const url = byId.get(n).callFrame.url || '';
      for (const [k, re] of owners) if (re.test(url)) { name = k; break; }
    }
    name ??= 'other';
    cat.set(name, (cat.get(name) ?? 0) + t);
  }
  const busy = total - (cat.get('(idle)') ?? 0);
  console.log('\nbusy time by category');
  for (const [k, t] of [...cat].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1])) console.log(`${((100 * t) / busy).toFixed(1).padStart(5)}%  ${k}`);
}
