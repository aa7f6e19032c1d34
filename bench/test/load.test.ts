import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * The load generator's settling phase (bench/load.mjs, `settleSec`): the same load first, answered
 * by the server but left out of the figures, and counted apart so the CPU meters can divide by
 * every request they saw.
 */
const LOAD = path.resolve(__dirname, '..', 'load.mjs');

function runLoad(input: object): Promise<Record<string, any>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-load-'));
  const file = path.join(dir, 'input.json');
  writeFileSync(file, JSON.stringify(input));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [LOAD, file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      rmSync(dir, { recursive: true, force: true });
      if (code !== 0) reject(new Error(`load.mjs exited ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!));
    });
  });
}

describe('bench/load.mjs', () => {
  const arrivals: number[] = [];
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      arrivals.push(Date.now());
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('settles under the same load first, without counting it in the figures', async () => {
    const connections = 4;
    const res = await runLoad({ url, method: 'GET', paths: ['/'], connections, durationSec: 1, settleSec: 1 });
    expect(res.settleOk).toBeGreaterThan(0);
    expect(res.ok).toBeGreaterThan(0);
    expect(res.non2xx).toBe(0);
    // the settling requests all arrived before the measured run began; the figures hold only the rest
    const before = arrivals.filter((t) => t < res.startedAt).length;
    expect(before).toBeGreaterThanOrEqual(res.settleOk);
    expect(before).toBeLessThanOrEqual(res.settleOk + connections);
    expect(arrivals.length - before).toBeGreaterThanOrEqual(res.ok);
    expect(arrivals.length).toBeLessThanOrEqual(res.ok + res.settleOk + 2 * connections);
  });

  it('counts nothing apart without settling', async () => {
    const res = await runLoad({ url, method: 'GET', paths: ['/'], connections: 2, durationSec: 1 });
    expect(res.settleOk).toBe(0);
    expect(res.ok).toBeGreaterThan(0);
  });
});
