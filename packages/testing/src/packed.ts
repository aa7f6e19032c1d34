import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './processes';

const run = promisify(execFile);

/**
 * The environment without what `npm test` tells its scripts about this repository (its package,
 * its workspace, its prefix); npm's own settings (registry, cache, proxy) stay.
 */
function npmEnv(): NodeJS.ProcessEnv {
  const repositorys = /^npm_(package_|lifecycle_|command$|config_workspaces?$|config_prefix$|config_local_prefix$)/i;
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !repositorys.test(k)));
}

/** npm's commands here are bounded: a hung install fails the test instead of outliving it. */
const NPM_TIMEOUT_MS = 100_000;

/**
 * Packs workspace packages the way they would be published (`npm pack`: only what their `files`
 * name) and installs the tarballs into a new, empty folder outside the repository, as a customer
 * would; their dependencies come from npm's cache when it has them. Code run with that folder as
 * its working directory imports the installed packages, never the workspace's.
 */
export async function installPacked(packageDirs: string[]): Promise<{ dir: string; tarballs: Array<{ name: string; files: string[] }>; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-packed-'));
  const tarballs: Array<{ name: string; file: string; files: string[] }> = [];
  for (const pkg of packageDirs) {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: path.join(ROOT, pkg), env: npmEnv(), timeout: NPM_TIMEOUT_MS });
    const [packed] = JSON.parse(stdout) as Array<{ name: string; filename: string; files: Array<{ path: string }> }>;
    tarballs.push({ name: packed!.name, file: path.join(dir, packed!.filename), files: packed!.files.map((f) => f.path).sort() });
  }
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'customer', private: true }));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...tarballs.map((t) => t.file)], { cwd: dir, env: npmEnv(), timeout: NPM_TIMEOUT_MS });
  return { dir, tarballs: tarballs.map(({ name, files }) => ({ name, files })), remove: () => rm(dir, { recursive: true, force: true }) };
}

/** What a published package may hold: its compiled code and declarations, README, licence, package.json. */
export const PUBLISHED_FILE = /^(dist\/[\w/-]+\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/;
