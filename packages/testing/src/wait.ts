import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * What a timed-out waitFor adds to its error, e.g. the output of the child processes a test
 * started (packages/testing/src/processes.ts registers them).
 */
export const timeoutDiagnostics = new Set<() => string>();

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls until `probe` returns a truthy value; fails with `what` and the last value otherwise. */
export async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 20_000, intervalMs = 50): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) {
      const tails = [...timeoutDiagnostics].map((d) => d()).filter(Boolean).join('\n');
      throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})${tails ? `\nchild processes:\n${tails}` : ''}`);
    }
    await sleep(intervalMs);
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Waits for a server's health route. 45 s: six processes starting at once on two busy cores (a
 * test of several replicas) took over 20 s to answer once; a server that never comes up still
 * fails the test.
 */
export async function waitForHttp(url: string, timeoutMs = 45_000): Promise<void> {
  await waitFor(`${url} to answer`, async () => {
    const res = await fetch(url).catch(() => null);
    return res?.ok ?? false;
  }, timeoutMs, 100);
}

export function tempFile(name: string): string {
  return path.join(mkdtempSync(path.join(os.tmpdir(), 'svc-dispatch-')), name);
}
