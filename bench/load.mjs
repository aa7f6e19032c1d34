// The load generator, in a process of its own: autocannon against one URL, with the API keys
// taken round robin (one per request) and, optionally, paths rotated per request.
// Input: a JSON file named by the first argument; output: one JSON line on stdout.
//   {url, method, paths: [..], body?, keys?: [..] | tokens?: [..] (Bearer), connections, durationSec? | amount?,
//    warmup?: {method, paths, body?, amount}, settleSec?, rate?}   (warm-up: JIT, pools, each key's cache entry;
//    rate: requests a second over all connections, at most)
// settleSec: the same load for that long first, not counted — this process's own JIT and first
// connections, which would otherwise land in the first few hundred ms of whatever it measures.
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));

function run(opts) {
  return new Promise((resolve, reject) => {
    const inst = autocannon(opts, (err, res) => (err ? reject(err) : resolve(res)));
    // a bound in time whatever happens (autocannon stops itself at `duration`)
    const hard = setTimeout(() => inst.stop(), ((opts.duration ?? 60) + 30) * 1000);
    hard.unref();
  });
}

function requestsFor(paths, keys, body, method, tokens) {
  let k = 0;
  let p = 0;
  return [
    {
      method,
      setupRequest(req) {
        const headers = { ...req.headers };
        if (keys?.length) headers['x-api-key'] = keys[k++ % keys.length];
        else if (tokens?.length) headers.authorization = `Bearer ${tokens[k++ % tokens.length]}`;
        return { ...req, method, path: paths[p++ % paths.length], headers, body };
      },
    },
  ];
}

const base = {
  url: input.url,
  connections: input.connections,
  pipelining: 1,
  timeout: 30,
  headers: { 'content-type': 'application/json', ...(input.headers ?? {}) },
};
const body = input.body === undefined ? undefined : typeof input.body === 'string' ? input.body : JSON.stringify(input.body);

if (input.warmup) {
  const w = input.warmup;
  const wBody = w.body === undefined ? undefined : JSON.stringify(w.body);
  await run({ ...base, connections: Math.min(base.connections, w.amount), amount: w.amount, requests: requestsFor(w.paths, input.keys, wBody, w.method, input.tokens) });
}
const opts = { ...base, ...(input.rate ? { overallRate: input.rate } : {}), requests: requestsFor(input.paths, input.keys, body, input.method, input.tokens) };
// CPU is counted from here, settling included, as the servers' meters count it (settleOk)
const cpu0 = process.cpuUsage();
const settled = input.settleSec ? await run({ ...opts, duration: input.settleSec }) : null;
if (input.amount) {
  opts.amount = input.amount;
  opts.connections = Math.min(opts.connections, input.amount);
}
else opts.duration = input.durationSec;
const started = Date.now();
const res = await run(opts);
const cpu = process.cpuUsage(cpu0);
const elapsedSec = (Date.now() - started) / 1000;

process.stdout.write(
  JSON.stringify({
    startedAt: started,
    finishedAt: Date.now(),
    requests: res.requests.total,
    ok: res['2xx'],
    non2xx: res.non2xx + (settled?.non2xx ?? 0),
    errors: res.errors + (settled?.errors ?? 0),
    settleOk: settled?.['2xx'] ?? 0,
    timeouts: res.timeouts,
    durationSec: res.duration,
    elapsedSec,
    rps: res['2xx'] / res.duration,
    latency: { p50: res.latency.p50, p90: res.latency.p90, p99: res.latency.p99, mean: res.latency.average, max: res.latency.max },
    statusCodes: res.statusCodeStats,
    cpuMs: Math.round((cpu.user + cpu.system) / 1000),
  }) + '\n',
);
