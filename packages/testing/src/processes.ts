import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from './context';
import { freePort, sleep, timeoutDiagnostics } from './wait';

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

export interface Child {
  name: string;
  proc: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** signal the process and wait for it to exit */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node script ...args` with `env` over this process's environment, keeping its output. */
export function spawnChild(name: string, script: string, args: string[], env: Record<string, string>, forceAfterMs = 15_000): Child {
  if (!existsSync(script)) throw new Error(`${script} is missing: build first (npx tsc -b)`);
  const proc = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

export class Children {
  private readonly all: Child[] = [];

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

  agent(ctx: TestContext, args: string[], env: Record<string, string> = {}): Child {
    return this.spawn('agent-sim', AGENT_MAIN, args, { ...ctx.childEnv, ...FAST_ENGINE_ENV, ...env });
  }

  api(ctx: TestContext, port: number, env: Record<string, string> = {}): Child {
    return this.spawn('api', API_MAIN, [], { ...ctx.childEnv, ...FAST_ENGINE_ENV, PORT: String(port), ...env });
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.all.map((c) => c.stop('SIGKILL')));
    this.all.length = 0;
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
