// A webhook receiver for B3 with a subscription: answers 200 at once and notes, per event, when
// it arrived and when its change happened (`occurred_at`), for the delivery rate and delay.
//
// It stands for another system's machine, so it runs in a process of its own in the idle CPU
// class (`chrt --idle`; nice 19 without chrt): on this host it takes only the CPU the platform
// leaves, instead of being charged to B3 (it parses every request, a cost of the same order as
// the deliverer's own sending).
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { percentile, round } from './scenario.mjs';

const SUMMARY_PATH = '/__summary';
const DISTINCT_PATH = '/__distinct';

/** Events of `type` received, their rate from the first change to the last arrival, and the delays. */
function summarize(arrivals, type) {
  const got = arrivals.filter((a) => a.type === type);
  if (!got.length) return { received: 0, distinct: 0, perSec: null, delayMs: { p50: null, p99: null } };
  const delays = got.map((a) => a.at - a.occurredAt);
  // a loop, not Math.min(...): a soak's hundreds of thousands of events overflow the call stack as arguments
  let first = Infinity;
  let last = -Infinity;
  for (const a of got) {
    if (a.occurredAt < first) first = a.occurredAt;
    if (a.at > last) last = a.at;
  }
  // the delays of the events whose change happened in each minute from the first one
  const minutes = new Map();
  for (const a of got) {
    const m = Math.floor((a.occurredAt - first) / 60_000);
    if (!minutes.has(m)) minutes.set(m, []);
    minutes.get(m).push(a.at - a.occurredAt);
  }
  return {
    received: got.length,
    distinct: new Set(got.map((a) => a.id)).size,
    perSec: round(got.length / Math.max(0.001, (last - first) / 1000), 0),
    delayMs: { p50: percentile(delays, 50), p99: percentile(delays, 99) },
    byMinute: [...minutes].sort(([a], [b]) => a - b).map(([minute, ds]) => ({
      minute: minute + 1, events: ds.length, p50: percentile(ds, 50), p99: percentile(ds, 99), max: ds.reduce((m, d) => (d > m ? d : m), -Infinity),
    })),
  };
}

function serve() {
  const arrivals = [];
  // distinct event ids per type, kept as they come: the bench asks often while it waits
  const distinct = new Map();
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url.startsWith(DISTINCT_PATH)) {
      const type = new URL(req.url, 'http://x').searchParams.get('type');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ distinct: distinct.get(type)?.size ?? 0 }));
      return;
    }
    if (req.method === 'GET' && req.url.startsWith(SUMMARY_PATH)) {
      const type = new URL(req.url, 'http://x').searchParams.get('type');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(summarize(arrivals, type)));
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        arrivals.push({ at, occurredAt: Date.parse(event.occurred_at), type: event.type, id: event.id });
        if (!distinct.has(event.type)) distinct.set(event.type, new Set());
        distinct.get(event.type).add(event.id);
      } catch { /* not an event: still answered, not counted */ }
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
  process.on('SIGTERM', () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
}

/**
 * `idle: false` runs it at the normal priority: where the delay to delivery is the figure, a
 * receiver that gets the CPU only when the platform leaves it some would be measured instead.
 */
export async function startWebhookReceiver({ idle: lowest = true } = {}) {
  const args = [process.execPath, fileURLToPath(import.meta.url), '--serve'];
  const idle = lowest && spawnSync('chrt', ['--version']).status === 0;
  const child = idle
    ? spawn('chrt', ['--idle', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(args[0], args.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  if (lowest && !idle) {
    try {
      setPriority(child.pid, 19);
    } catch { /* not allowed here: it runs at the normal priority */ }
  }
  const port = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the webhook receiver exited with ${code}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  return {
    url: `${base}/hook`,
    /** How many different events of `type` arrived. */
    async distinct(type) {
      const res = await fetch(`${base}${DISTINCT_PATH}?type=${encodeURIComponent(type)}`);
      return (await res.json()).distinct;
    },
    /** The rate and delays of the events of `type` received so far. */
    async summary(type) {
      const res = await fetch(`${base}${SUMMARY_PATH}?type=${encodeURIComponent(type)}`);
      return res.json();
    },
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}

if (process.argv.includes('--serve')) serve();
