import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from './context';
import { freePort, sleep, timeoutDiagnostics } from './wait';
import { passBegunAfter, type DispatcherPass } from './metrics';

/**
 * Real dispatcher, agent-sim and API processes spawned from their dist/ (build first: `npx tsc
 * -b`; `npm test` does it), sharing a test's database and Redis prefix through ctx.childEnv.
 * They are started by file path, not imported: this package needs the apps built, not linked
 * (docs/decisions/test-layers.md).
 */
export const ROOT = path.resolve(__dirname, '../../..');
export const DISPATCHER_MAIN = path.join(ROOT, 'apps/dispatcher/dist/main.js');
export const AGENT_MAIN = path.join(ROOT, 'apps/agent-sim/dist/main.js');
export const API_MAIN = path.join(ROOT, 'apps/api/dist/main.js');
/** The Python SDK (sdk/python), whose `python3 -m svc_agent.sim` is interchangeable with agent-sim. */
export const PYTHON_SDK = path.join(ROOT, 'sdk/python');

/**
 * Which simulated robot `Children.agent` starts: agent-sim (TypeScript SDK) unless SVC_ROBOT_SIM is
 * `python`, then `python3 -m svc_agent.sim` on the Python SDK, with the same flags, environment,
 * journal and log lines (docs/agent-sim.md). A `*.python.test.ts` file calls usePythonRobots and
 * then requires the test file it runs again; jest gives each test file its own process.env.
 */
export function usePythonRobots(): void {
  process.env.SVC_ROBOT_SIM = 'python';
}

/** Whether this test file's robots are the Python simulator (usePythonRobots, or SVC_ROBOT_SIM=python). */
export function onPythonRobots(): boolean {
  return process.env.SVC_ROBOT_SIM === 'python';
}

/**
 * Engine settings that make tests quick: fast sweeps, machines offline after 10 s. Not shorter: on
 * a loaded 2-core CI host (Postgres, Redis, Chromium and a dozen child processes) an agent's
 * heartbeat or lease renewal was sometimes over 2 s late, so a healthy machine was judged offline
 * (refusing an auto-selected trigger, failing its runs). Tests of a lost machine or a lapsed lease
 * wait for the verdict with waitFor, which returns as soon as it is given.
 */
export const FAST_ENGINE_ENV = {
  MACHINE_OFFLINE_AFTER_SECONDS: '10',
  DISPATCH_SWEEP_MS: '200',
  DISPATCH_RECONCILE_MS: '500',
};

export interface WatchedDispatcher {
  child: Child;
  metricsUrl: string;
  /** see passBegunAfter (metrics.ts) */
  passBegunAfter(pass: DispatcherPass, timeoutMs?: number): Promise<void>;
}

export interface Child {
  name: string;
  proc: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** signal the process and wait for it to exit */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `node script ...args` with `env` over this process's environment (or over `baseEnv`
 * alone when given), keeping its output.
 */
export function spawnChild(name: string, script: string, args: string[], env: Record<string, string>, forceAfterMs = 15_000, baseEnv?: Record<string, string>): Child {
  if (!existsSync(script)) throw new Error(`${script} is missing: build first (npx tsc -b)`);
  return spawnCommand(name, process.execPath, [script, ...args], { ...(baseEnv ?? process.env), ...env }, forceAfterMs);
}

/** Starts `command ...args` with exactly `env`, keeping its output. */
export function spawnCommand(name: string, command: string, args: string[], env: Record<string, string | undefined>, forceAfterMs = 15_000): Child {
  const proc = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (chunk: Buffer) => {
    out += chunk.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code, sig) => resolve(code ?? (sig ? -1 : null))));
  return {
    name,
    proc,
    output: () => out,
    exited,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), forceAfterMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * What only the platform's processes may hold: a robot (agent-sim) gets none of it, in its
 * environment or inherited (docs/agent-sim.md).
 */
export const PLATFORM_ONLY_ENV = /^(DATABASE_|REDIS_|PG|ASSET_ENCRYPTION_KEY$|MACHINE_|DISPATCH_|WEBHOOK_)/;
/** Settings of a test's agent that belong to the robot, not to the API serving it. */
const ROBOT_ONLY_ENV = /^(METRICS_PORT|METRICS_TOKEN|AGENT_)/;

/** The environment of this process without anything only the platform may hold. */
export function robotEnv(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && !PLATFORM_ONLY_ENV.test(e[0])));
}

/** The Python the Python simulator runs on (jest.config.js finds one that imports websockets). */
function pythonForRobots(): string {
  const python = process.env.SVC_PYTHON;
  if (!python) throw new Error('SVC_ROBOT_SIM=python needs a Python 3.11+ with websockets: apt-get install -y python3 python3-websockets, or set PYTHON_PATH');
  return python;
}

export interface AgentOptions {
  /** the platform URL(s) the agent uses (several comma-separated); default: the context's own API process */
  url?: string;
}

export class Children {
  private readonly all: Child[] = [];
  /** the API processes agents of a context connect to, one per distinct platform environment */
  private readonly gateways = new Map<string, Promise<string>>();

  constructor() {
    // a timed-out wait shows what this test file's processes said
    timeoutDiagnostics.add(() => this.tails());
  }

  /** The children started so far (stopAll forgets them). */
  get started(): readonly Child[] {
    return this.all;
  }

  /** The end of each running child's output (warnings and errors at the tests' log level). */
  tails(chars = 2000): string {
    return this.all.map((c) => `--- ${c.name} (pid ${c.proc.pid}${c.proc.exitCode !== null ? `, exited ${c.proc.exitCode}` : ''}) ---\n${c.output().slice(-chars)}`).join('\n');
  }

  spawn(name: string, script: string, args: string[], env: Record<string, string>): Child {
    const child = spawnChild(name, script, args, env);
    this.all.push(child);
    return child;
  }

  dispatcher(ctx: TestContext, env: Record<string, string> = {}): Child {
    return this.spawn('dispatcher', DISPATCHER_MAIN, [], { ...ctx.childEnv, ...FAST_ENGINE_ENV, ...env });
  }

  /**
   * A dispatcher serving its metrics on a port of its own, so that a test can wait for its
   * periodic passes (passBegunAfter) instead of sleeping before a check that nothing happened.
   */
  async watchedDispatcher(ctx: TestContext, env: Record<string, string> = {}): Promise<WatchedDispatcher> {
    const port = await freePort();
    const child = this.dispatcher(ctx, { METRICS_PORT: String(port), ...env });
    const metricsUrl = `http://127.0.0.1:${port}/metrics`;
    return { child, metricsUrl, passBegunAfter: (pass, timeoutMs) => passBegunAfter(metricsUrl, pass, timeoutMs) };
  }

  /**
   * An agent-sim process holding only the platform's URL and its machine keys (`args`): it
   * connects to `options.url`, or to an API process started for this context (and for the
   * platform settings in `env`, which that API gets; the robot gets only LOG_LEVEL, METRICS_*,
   * AGENT_* and OTEL_* settings).
   */
  async agent(ctx: TestContext, args: string[], env: Record<string, string> = {}, options: AgentOptions = {}): Promise<Child> {
    const url = options.url ?? (await this.gateway(ctx, env));
    const own = Object.fromEntries(Object.entries(env).filter(([k]) => !PLATFORM_ONLY_ENV.test(k)));
    // the keys travel in the environment, as a robot's should (the command line is readable by every user of a host)
    const keys: string[] = [];
    const rest = args.filter((a, i) => {
      if (a === '--machine-key') return false;
      if (args[i - 1] === '--machine-key') {
        keys.push(a);
        return false;
      }
      return true;
    });
    const keyEnv: Record<string, string> = keys.length ? { AGENT_MACHINE_KEYS: keys.join(',') } : {};
    const environment = { ...robotEnv(process.env), LOG_LEVEL: ctx.childEnv.LOG_LEVEL!, NODE_ENV: 'test', ...keyEnv, ...own, SVC_URL: url };
    const robot = onPythonRobots()
      ? spawnCommand('agent-sim (python)', pythonForRobots(), ['-B', '-m', 'svc_agent.sim', ...rest], { ...environment, PYTHONPATH: PYTHON_SDK })
      : spawnChild('agent-sim', AGENT_MAIN, rest, {}, 15_000, environment);
    this.all.push(robot);
    return robot;
  }

  /** The URL of this context's API process for agents (started on first use). */
  gateway(ctx: TestContext, env: Record<string, string> = {}): Promise<string> {
    const platform = Object.fromEntries(Object.entries(env).filter(([k]) => !ROBOT_ONLY_ENV.test(k)));
    const key = JSON.stringify([ctx.childEnv.DATABASE_URL, ctx.childEnv.REDIS_PREFIX, platform]);
    let url = this.gateways.get(key);
    if (!url) {
      url = (async () => {
        const port = await freePort();
        const child = this.spawn('api (agents)', API_MAIN, [], { ...ctx.childEnv, ...FAST_ENGINE_ENV, HOST: '127.0.0.1', PORT: String(port), ...platform });
        const base = `http://127.0.0.1:${port}`;
        await waitHealthy(base, child);
        return base;
      })();
      this.gateways.set(key, url);
      url.catch(() => this.gateways.delete(key));
    }
    return url;
  }

  api(ctx: TestContext, port: number, env: Record<string, string> = {}): Child {
    return this.spawn('api', API_MAIN, [], { ...ctx.childEnv, ...FAST_ENGINE_ENV, PORT: String(port), ...env });
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.all.map((c) => c.stop('SIGKILL')));
    this.all.length = 0;
    this.gateways.clear();
  }
}

/**
 * A real API process sharing a test context's database and Redis prefix, as replicas behind a
 * load balancer would (with the API's own engine settings: no FAST_ENGINE_ENV).
 */
export interface ApiProcess {
  url: string;
  stop(): Promise<void>;
}

async function waitHealthy(url: string, child: Child): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null) throw new Error(`API process exited with ${child.proc.exitCode}:\n${child.output().slice(-20_000)}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`API process did not become healthy:\n${child.output().slice(-20_000)}`);
}

export async function startApiProcess(childEnv: Record<string, string>, extraEnv: Record<string, string> = {}): Promise<ApiProcess> {
  const port = await freePort();
  const child = spawnChild('api', API_MAIN, [], { ...childEnv, HOST: '127.0.0.1', PORT: String(port), ...extraEnv }, 10_000);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHealthy(url, child);
  } catch (err) {
    child.proc.kill('SIGKILL');
    throw err;
  }
  return { url, stop: async () => void (await child.stop('SIGTERM')) };
}

/**
 * `count` API processes started together. When one cannot start, the others are stopped before
 * the error is thrown (a bare Promise.all left them running after the test run).
 */
export async function startApiProcesses(count: number, childEnv: Record<string, string>, extraEnv: Record<string, string> = {}): Promise<ApiProcess[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, () => startApiProcess(childEnv, extraEnv)));
  const started = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(started.map((p) => p.stop()));
    throw failed.reason;
  }
  return started;
}
