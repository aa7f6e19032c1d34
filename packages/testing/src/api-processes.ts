import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

/**
 * Real API processes (apps/api/dist/main.js, built by `npx tsc -b` / `npm test`) sharing a test
 * context's database and Redis prefix, as replicas behind a load balancer would.
 */
export interface ApiProcess {
  url: string;
  stop(): Promise<void>;
}

const MAIN = path.resolve(__dirname, '../dist/main.js');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`API process exited with ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`API process did not become healthy:\n${output()}`);
}

export async function startApiProcess(childEnv: Record<string, string>, extraEnv: Record<string, string> = {}): Promise<ApiProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...childEnv, HOST: '127.0.0.1', PORT: String(port), ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHealthy(url, child, () => output);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(force);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
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
