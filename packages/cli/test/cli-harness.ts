import { spawn } from 'node:child_process';
import path from 'node:path';

/**
 * The real compiled CLI (`node packages/cli/bin/svc.js`, built by `npm test` before jest), run as
 * a fresh Node process with the environment a test gives it.
 */
export const ROOT = path.resolve(__dirname, '..', '..', '..');
export const BIN = path.join(ROOT, 'packages', 'cli', 'bin', 'svc.js');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(baseEnv: Record<string, string>, args: string[], opts: { env?: Record<string, string | undefined>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', ...baseEnv };
    for (const [k, v] of Object.entries(opts.env ?? {})) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}
