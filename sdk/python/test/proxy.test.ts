import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { exitOf, robotConnected, seedWorkspace, selfSignedCertificate, startConnectProxy, waitFor, type RobotProcess } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { serveHub, type ServedHub } from '../../../apps/api/test/agent-hub-support';

/**
 * A Python robot at a customer's site, as the TypeScript one is tested in
 * apps/api/test/agent-protocol.test.ts: the platform behind TLS with the customer's own
 * certificate authority, reached through the outbound proxy the site requires (given, or from
 * HTTPS_PROXY unless NO_PROXY names the host).
 */
jest.setTimeout(60_000);

/** The Python jest.config.js found with websockets (scripts/python.cjs). */
const PYTHON = process.env.SVC_PYTHON ?? '/usr/bin/python3';
const SDK_DIR = path.join(__dirname, '..');

/**
 * A robot given the CA file and (ROBOT_PROXY set) a proxy, '' meaning `proxy=None`; without
 * ROBOT_PROXY it takes the environment's. It prints the machine it was welcomed as.
 */
const PROXIED_ROBOT = `
import asyncio, logging, os, signal, sys
from svc_agent import connect
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(message)s")

async def on_job(ctx):
    return {}

async def main():
    options = {}
    if "ROBOT_PROXY" in os.environ:
        options["proxy"] = os.environ["ROBOT_PROXY"] or None
    robot = connect(os.environ["SVC_URL"], os.environ["MACHINE_KEY"], on_job, ca_file=os.environ.get("CA_FILE"), **options)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)

    async def welcomed():
        machine = await robot.ready
        print(f"robot connected as {machine['id']}", flush=True)

    # stopped whether or not it was ever welcomed (a refused certificate never is)
    waiting = asyncio.ensure_future(welcomed())
    await stop.wait()
    waiting.cancel()
    await robot.close(1)

asyncio.run(main())
`;

/** A Python robot process with the base URL, the machine key and the environment given, nothing of the test's own. */
function spawnRobot(url: string, machineKey: string, env: Record<string, string>): RobotProcess {
  const proc = spawn(PYTHON, ['-B', '-c', PROXIED_ROBOT], {
    cwd: SDK_DIR,
    env: { PATH: process.env.PATH ?? '', PYTHONPATH: SDK_DIR, SVC_URL: url, MACHINE_KEY: machineKey, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (d) => (output += d.toString()));
  proc.stderr!.on('data', (d) => (output += d.toString()));
  return { proc, output: () => output };
}

/** A proxy that answers every CONNECT 407, and keeps what it was asked. */
async function startRefusingProxy(): Promise<{ port: number; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const server = net.createServer((socket) => {
    let head = '';
    socket.on('error', () => undefined);
    socket.on('data', (d) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      requests.push(head);
      socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="site"\r\nContent-Length: 0\r\n\r\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Stops a robot (SIGTERM, its graceful close) and says whether it exited cleanly. */
async function stop(robot: RobotProcess): Promise<number | NodeJS.Signals | null> {
  if (robot.proc.exitCode !== null) return robot.proc.exitCode;
  robot.proc.kill('SIGTERM');
  return exitOf(robot.proc);
}

describe('a Python robot behind a proxy, on TLS with a private certificate authority', () => {
  let t: ApiTestContext;
  let served: ServedHub;
  let base: string;
  let caDir: string;
  let caFile: string;
  const robots: RobotProcess[] = [];
  const start = (url: string, machineKey: string, env: Record<string, string>) => {
    const robot = spawnRobot(url, machineKey, env);
    robots.push(robot);
    return robot;
  };
  const said = () => robots.map((r, i) => `--- robot ${i + 1} said ---\n${r.output()}`).join('\n');

  beforeAll(async () => {
    t = await createApiTestContext({ machineOfflineAfterSeconds: 3 });
    const cert = selfSignedCertificate();
    served = await serveHub(t, { tls: cert });
    base = served.url;
    caDir = mkdtempSync(path.join(os.tmpdir(), 'svc-python-ca-'));
    caFile = path.join(caDir, 'ca.pem');
    writeFileSync(caFile, cert.cert);
  });
  afterEach(() => {
    for (const r of robots.splice(0)) if (r.proc.exitCode === null) r.proc.kill('SIGKILL');
  });
  afterAll(async () => {
    await served.close();
    await t.close();
    rmSync(caDir, { recursive: true, force: true });
  });

  it('connects through the proxy given, trusting the CA file given, and refuses a certificate it was not told to trust', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const proxy = await startConnectProxy();
    try {
      // direct (proxy=None) and without the CA: the platform's certificate is refused
      const untrusting = start(base, machine.machineKey, { ROBOT_PROXY: '' });
      await waitFor('the untrusted certificate refused', async () => /connection lost \(code 1006: .*CERTIFICATE_VERIFY_FAILED/.test(untrusting.output()));
      expect(untrusting.output()).not.toContain('robot connected');
      expect(await stop(untrusting)).toBe(0);
      expect(proxy.tunnels).toHaveLength(0);

      const robot = start(base, machine.machineKey, { ROBOT_PROXY: proxy.url, CA_FILE: caFile });
      await robotConnected(robot);
      expect(robot.output()).toContain(`robot connected as ${machine.row.id as string}`);
      // TLS went through the tunnel to the platform's address, verified against its name there
      expect(proxy.tunnels).toEqual([`127.0.0.1:${new URL(base).port}`]);
      expect(await stop(robot)).toBe(0);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${said()}`);
    } finally {
      await proxy.close();
    }
  });

  it('takes the proxy from HTTPS_PROXY unless NO_PROXY names the host, and says why a proxy refused the tunnel (with the credentials of its URL, never printed)', async () => {
    const ws = await seedWorkspace(t.sql);
    const machine = await ws.machine();
    const proxy = await startConnectProxy();
    try {
      const proxied = start(base, machine.machineKey, { HTTPS_PROXY: proxy.url, NO_PROXY: 'example.internal', CA_FILE: caFile });
      await robotConnected(proxied);
      expect(proxy.tunnels).toHaveLength(1);
      expect(await stop(proxied)).toBe(0);

      const direct = start(base, machine.machineKey, { HTTPS_PROXY: proxy.url, NO_PROXY: '127.0.0.1', CA_FILE: caFile });
      await robotConnected(direct);
      expect(proxy.tunnels).toHaveLength(1);
      expect(await stop(direct)).toBe(0);

      // a proxy that wants other credentials, from https_proxy: lower case first, as curl and the
      // TypeScript robot read them (the upper-case one, the working proxy, is not used)
      const refusing = await startRefusingProxy();
      try {
        const refused = start(base, machine.machineKey, { https_proxy: `http://ana:secreto@127.0.0.1:${refusing.port}`, HTTPS_PROXY: proxy.url, CA_FILE: caFile });
        await waitFor('the refusal said', async () => /connection lost \(code 1006: the proxy http:\/\/ana:\*\*\*@127\.0\.0\.1:\d+ refused CONNECT 127\.0\.0\.1:\d+: HTTP\/1\.1 407 Proxy Authentication Required\)/.test(refused.output()));
        expect(refusing.requests[0]).toMatch(new RegExp(`^CONNECT 127\\.0\\.0\\.1:${new URL(base).port} HTTP/1\\.1\r\n`));
        expect(refusing.requests[0]).toContain(`Proxy-Authorization: Basic ${Buffer.from('ana:secreto').toString('base64')}\r\n`);
        expect(refused.output()).not.toContain('secreto');
        expect(proxy.tunnels).toHaveLength(1);
        expect(await stop(refused)).toBe(0);
      } finally {
        await refusing.close();
      }
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${said()}`);
    } finally {
      await proxy.close();
    }
  });
});
