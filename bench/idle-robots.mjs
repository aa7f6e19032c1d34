// B8's load generator: many idle robots in one process, each a raw WebSocket on the machine
// protocol (docs/agent-protocol.md) with its own machine key. Each answers `welcome` with a
// heartbeat (`fresh: true`, as the SDK's first one), then sends `{"id":n,"type":"heartbeat",
// "running":[]}` every `heartbeat_ms` from its welcome; a `job.start` is answered at once with
// `job.finish` (completed). Driven by the bench over IPC (started with an IPC channel):
//   → {type: 'connected', …}            once every robot has connected or failed to
//   ← {cmd: 'stats'}                     → {type: 'stats', …}: heartbeats sent and answered so far
//   ← {cmd: 'trigger', …}                → {type: 'triggered', tries: [...]}: POST /jobs/trigger for one
//                                         robot's machine, one at a time, timing the 201 → job.start
//   ← {cmd: 'close'}                     closes every socket and exits
// Input (JSON file, first argument): {url, robots: [{id, key}], concurrency}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const WebSocket = require('ws');

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const wsUrl = `${input.url.replace(/^http/, 'ws')}/api/v1/agent/connect`;
const send = (m) => process.send?.(m);
process.on('disconnect', () => process.exit(0));

const stats = {
  open: 0, welcomed: 0, heartbeatsSent: 0, heartbeatsAnswered: 0, heartbeatErrors: 0, replyErrors: {},
  connectFailures: [], closes: {}, firstFailureAfter: null, jobStarts: 0, finishesAnswered: 0, heartbeatMs: null,
};
const robots = input.robots.map((r) => ({ ...r, ws: null, nextId: 1, pending: new Map(), timer: null }));
/** job id → time its job.start arrived (performance.now()), or a waiter */
const starts = new Map();
const startWaiters = new Map();

function request(robot, message) {
  const id = robot.nextId++;
  return new Promise((resolve) => {
    robot.pending.set(id, resolve);
    robot.ws.send(JSON.stringify({ id, ...message }));
  });
}

function heartbeat(robot, first) {
  if (robot.ws?.readyState !== WebSocket.OPEN) return;
  stats.heartbeatsSent++;
  void request(robot, { type: 'heartbeat', running: [], ...(first ? { fresh: true } : {}) }).then((reply) => {
    if (reply.error) {
      stats.heartbeatErrors++;
      stats.replyErrors[reply.error.code] = (stats.replyErrors[reply.error.code] ?? 0) + 1;
    } else stats.heartbeatsAnswered++;
    if (first) robot.onFirstBeat?.();
  });
}

function connect(robot) {
  return new Promise((resolve) => {
    let settled = false;
    const done = (ok, why) => {
      if (settled) return;
      settled = true;
      if (!ok) {
        stats.connectFailures.push({ robot: robot.index, why });
        if (stats.firstFailureAfter === null) stats.firstFailureAfter = stats.welcomed;
      }
      resolve(ok);
    };
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${robot.key}` }, perMessageDeflate: false });
    robot.ws = ws;
    const timeout = setTimeout(() => {
      done(false, 'no welcome and first heartbeat answer within 30 s');
      ws.terminate();
    }, 30_000);
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(timeout);
      done(false, `HTTP ${res.statusCode}`);
      res.resume();
    });
    ws.on('error', (err) => {
      clearTimeout(timeout);
      done(false, err.code ?? err.message);
    });
    ws.on('open', () => stats.open++);
    ws.on('close', (code) => {
      stats.closes[code] = (stats.closes[code] ?? 0) + 1;
      if (robot.timer) clearInterval(robot.timer);
      robot.timer = null;
      clearTimeout(timeout);
      done(false, `closed ${code} before its first heartbeat was answered`);
    });
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString());
      if (msg.type === 'reply') {
        const p = robot.pending.get(msg.re);
        robot.pending.delete(msg.re);
        p?.(msg);
        return;
      }
      if (msg.type === 'welcome') {
        stats.welcomed++;
        stats.heartbeatMs = msg.heartbeat_ms;
        robot.onFirstBeat = () => {
          clearTimeout(timeout);
          done(true);
        };
        heartbeat(robot, true);
        robot.timer = setInterval(() => heartbeat(robot, false), msg.heartbeat_ms);
        return;
      }
      if (msg.type === 'job.start') {
        const at = performance.now();
        stats.jobStarts++;
        starts.set(msg.job.id, at);
        startWaiters.get(msg.job.id)?.(at);
        void request(robot, { type: 'job.finish', job_id: msg.job.id, attempt: msg.job.attempt, status: 'completed' }).then((reply) => {
          if (!reply.error) stats.finishesAnswered++;
          robot.finished?.(msg.job.id, reply);
        });
      }
    });
  });
}

async function connectAll() {
  const started = Date.now();
  let next = 0;
  robots.forEach((r, i) => (r.index = i));
  // a few at a time: the API looks up at most four keys of one address at once and queues a few more
  await Promise.all(Array.from({ length: input.concurrency ?? 4 }, async () => {
    while (next < robots.length) await connect(robots[next++]);
  }));
  const connected = robots.filter((r) => r.ws?.readyState === WebSocket.OPEN).length;
  send({ type: 'connected', connected, seconds: (Date.now() - started) / 1000, stats: { ...stats, connectFailures: stats.connectFailures.slice(0, 20), connectFailureCount: stats.connectFailures.length } });
}

async function trigger({ apiUrl, keys, processId, robotIndex, tries, warmup = 2, pauseMs = 20 }) {
  const robot = robots[robotIndex];
  const out = [];
  for (let i = 0; i < tries + warmup; i++) {
    const wall = Date.now();
    const t0 = performance.now();
    const res = await fetch(`${apiUrl}/api/v1/jobs/trigger`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keys[i % keys.length] },
      body: JSON.stringify({ process_id: processId, machine_id: robot.id, input_data: { try: i } }),
    });
    const body = await res.json();
    const t201 = performance.now();
    if (res.status !== 201) throw new Error(`trigger answered ${res.status}: ${JSON.stringify(body)}`);
    const jobId = body.data.id;
    const finished = new Promise((resolve) => {
      robot.finished = (id, reply) => id === jobId && resolve(reply);
    });
    const tStart = starts.get(jobId) ?? await Promise.race([
      new Promise((resolve) => startWaiters.set(jobId, resolve)),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`no job.start for job ${jobId} within 10 s`)), 10_000)),
    ]);
    startWaiters.delete(jobId);
    const reply = await finished;
    if (reply.error) throw new Error(`job.finish answered ${JSON.stringify(reply.error)}`);
    if (i >= warmup) out.push({ jobId, wall, requestMs: t201 - t0, answeredToStartMs: tStart - t201, sentToStartMs: tStart - t0 });
    await new Promise((r) => setTimeout(r, pauseMs));
  }
  return out;
}

process.on('message', async (m) => {
  try {
    if (m.cmd === 'stats') send({ type: 'stats', ...stats, connectFailures: undefined, connectFailureCount: stats.connectFailures.length, open: robots.filter((r) => r.ws?.readyState === WebSocket.OPEN).length });
    else if (m.cmd === 'trigger') send({ type: 'triggered', tries: await trigger(m) });
    else if (m.cmd === 'close') {
      for (const r of robots) {
        if (r.timer) clearInterval(r.timer);
        r.ws?.terminate();
      }
      process.exit(0);
    }
  } catch (err) {
    send({ type: 'error', message: err.message });
  }
});

await connectAll();
