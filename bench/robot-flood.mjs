// B8's hostile robot: one machine that floods the API with `asset.get` and never reads a reply.
// It connects with its own key, has a job triggered on itself, acknowledges the `job.start`, then
// stops reading its socket and sends `asset.get` for that run at a steady rate (and a heartbeat
// listing the run every `heartbeat_ms`, so the run stays its own) for the given time. When the API
// cuts it (its unread replies past the bound), it connects again at once and goes on, as a
// hostile or broken robot would. Started with an IPC channel; the input is a JSON file (first
// argument): {url, key, machineId, apiKey, processId, asset, rate, seconds}. Sends
// {type: 'flooded', sent, connections, closes} when done and exits.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const WebSocket = require('ws');

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const wsUrl = `${input.url.replace(/^http/, 'ws')}/api/v1/agent/connect`;
process.on('disconnect', () => process.exit(0));

const closes = {};
let connections = 0;
let sent = 0;
let nextId = 1;
let ws = null;
let run = null;
let flooding = false;
let heartbeatMs = 5000;
/** request id → what waits for its reply (before the flood) */
const answered = new Map();

const sendNow = (message) => {
  if (ws?.readyState !== WebSocket.OPEN) return false;
  ws.send(JSON.stringify({ id: nextId++, ...message }));
  return true;
};
const heartbeat = (fresh) => sendNow({ type: 'heartbeat', running: run ? [{ job_id: run.id, attempt: run.attempt, alive: true }] : [], ...(fresh ? { fresh: true } : {}) });

/** One connection; resolves at its welcome. Reading stops once the run is known. */
function connect(fresh) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${input.key}` }, perMessageDeflate: false });
    ws = socket;
    socket.on('error', (err) => reject(err));
    socket.on('close', (code) => {
      closes[code] = (closes[code] ?? 0) + 1;
      // again at once, as a hostile robot would; a refused upgrade is not hammered
      if (flooding && ws === socket) setTimeout(() => void connect(false).catch(() => undefined), code === 1006 ? 100 : 0);
    });
    socket.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg.type === 'welcome') {
        connections++;
        heartbeatMs = msg.heartbeat_ms;
        heartbeat(fresh);
        // the robot reads nothing more: every reply from now on stays unread
        if (run) socket._socket.pause();
        resolve();
      } else if (msg.type === 'reply') {
        answered.get(msg.re)?.();
        answered.delete(msg.re);
      } else if (msg.type === 'job.start' && !run) {
        run = { id: msg.job.id, attempt: msg.job.attempt };
        sendNow({ type: 'job.started', job_id: run.id, attempt: run.attempt });
        started?.();
      }
    });
  });
}

let started;
const jobStarted = new Promise((resolve) => (started = resolve));

await connect(true);
const res = await fetch(`${input.url}/api/v1/jobs/trigger`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-api-key': input.apiKey },
  body: JSON.stringify({ process_id: input.processId, machine_id: input.machineId, input_data: { flood: true } }),
});
if (res.status !== 201) throw new Error(`trigger answered ${res.status}: ${await res.text()}`);
await Promise.race([jobStarted, new Promise((_, reject) => setTimeout(() => reject(new Error('no job.start within 10 s')), 10_000))]);
// a few reads answered first: the flood is measured from the robot's steady state, not the
// process's first asset read
const warm = [];
for (let i = 0; i < 20; i++) warm.push(new Promise((resolve) => (answered.set(nextId + i, resolve))));
for (let i = 0; i < 20; i++) sendNow({ type: 'asset.get', job_id: run.id, attempt: run.attempt, name: input.asset });
await Promise.all(warm);
ws._socket.pause();
process.send({ type: 'ready' });

flooding = true;
const tickMs = 10;
const perTick = input.rate * (tickMs / 1000);
const began = performance.now();
let due = 0;
const request = { type: 'asset.get', job_id: run.id, attempt: run.attempt, name: input.asset };
const floodTimer = setInterval(() => {
  // the sends owed by now, whatever the timer's lateness: the rate holds over the whole window
  due = Math.floor(((performance.now() - began) / 1000) * input.rate) - sent;
  for (let i = 0; i < Math.min(due, perTick * 10); i++) if (sendNow(request)) sent++;
}, tickMs);
const beatTimer = setInterval(() => heartbeat(false), heartbeatMs);
await new Promise((resolve) => setTimeout(resolve, input.seconds * 1000));
flooding = false;
clearInterval(floodTimer);
clearInterval(beatTimer);
ws?.terminate();
process.send({ type: 'flooded', sent, seconds: (performance.now() - began) / 1000, connections, closes });
setTimeout(() => process.exit(0), 100);
