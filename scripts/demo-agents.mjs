// Runs the demo workspace's simulated machines (docker-compose's `agents` service): ensures the
// demo workspace exists, re-issues its machine keys (only hashes are stored) and starts agent-sim
// with SVC_URL and those keys alone (the platform's database, Redis and key settings stay here).
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { robotEnv } from './apps.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const demo = spawnSync(process.execPath, [path.join(ROOT, 'packages/cli/bin/svc.js'), 'demo', '--json'], { encoding: 'utf8' });
if (demo.status !== 0) {
  console.error(`Setting up the demo workspace failed: ${(demo.stderr || demo.stdout).trim()}`);
  process.exit(1);
}
const { machines } = JSON.parse(demo.stdout);
if (!process.env.SVC_URL) {
  console.error('SVC_URL is not set: the robots need the platform\'s base URL (e.g. http://api:3000).');
  process.exit(1);
}
const agents = spawn(process.execPath, [path.join(ROOT, 'apps/agent-sim/dist/main.js')], {
  stdio: 'inherit',
  // the keys in the environment: a command line is readable by every user of the host
  env: { ...robotEnv(process.env), AGENT_MACHINE_KEYS: machines.map((m) => m.machine_key).join(',') },
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => agents.kill(signal));
agents.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
