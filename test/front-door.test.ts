import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import * as publicCore from '@svc/core';
import * as publicSchemas from '@svc/core/schemas';
import * as publicProtocol from '@svc/core/machine-protocol';
import * as publicObservability from '@svc/core/observability';
import { specifiers } from './source-scan';

/**
 * One front door into core (docs/architecture.md, "The engine"): the transports (apps/*, the CLI,
 * the robot SDK) import core only by its package name, never `@svc/core/internals` or a path into
 * core's files; and the public index (@svc/core) exports no repository function: those are
 * reached through the engine's commands.
 */
const ROOT = path.resolve(__dirname, '..');
const TRANSPORT_SOURCES = ['apps/api/src', 'apps/dispatcher/src', 'apps/agent-sim/src', 'apps/console/src', 'packages/cli/src', 'packages/agent/src'];

function walk(dir: string, keep: (rel: string) => boolean, out: string[] = []): string[] {
  for (const name of readdirSync(path.join(ROOT, dir))) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const rel = `${dir}/${name}`;
    if (statSync(path.join(ROOT, rel)).isDirectory()) walk(rel, keep, out);
    else if (keep(rel)) out.push(rel);
  }
  return out;
}


/**
 * The entries core's package.json declares for the transports: the index, and dependency-free
 * modules the console bundles (such as the item statuses); never the internals.
 */
const PUBLIC_ENTRIES = Object.keys((JSON.parse(readFileSync(path.join(ROOT, 'packages/core/package.json'), 'utf8')) as { exports: Record<string, unknown> }).exports)
  .filter((entry) => entry !== './internals')
  .map((entry) => (entry === '.' ? '@svc/core' : `@svc/core/${entry.slice(2)}`));

const transportFiles = () => TRANSPORT_SOURCES.flatMap((dir) => walk(dir, (rel) => /\.(?:ts|tsx|mts|cts|js|mjs)$/.test(rel)));

/** What a transport's file at `rel` imports from core other than its public entry. */
export function backDoors(rel: string, source: string): string[] {
  const found: string[] = [];
  for (const spec of specifiers(source)) {
    if (PUBLIC_ENTRIES.includes(spec)) continue;
    if (spec === '@svc/core/internals' || spec.startsWith('@svc/core/')) {
      found.push(`${rel}: imports ${spec} (the apps and the CLI use @svc/core: the engine and its vocabulary)`);
    } else if (spec.startsWith('.')) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec));
      if (target === 'packages/core' || target.startsWith('packages/core/')) found.push(`${rel}: reaches into ${target} (import @svc/core)`);
    }
  }
  return found;
}

describe('the transports use the front door', () => {
  it('finds their sources (a scan that saw none would pass on anything)', () => {
    const files = transportFiles();
    expect(files.length).toBeGreaterThan(50);
    expect(files).toEqual(expect.arrayContaining([
      'apps/api/src/deps.ts', 'apps/api/src/routes/settings/crud.ts', 'apps/api/src/auth/api-key-store.ts', 'apps/dispatcher/src/dispatcher.ts',
      'packages/cli/src/main.ts', 'packages/cli/src/workspace/apply.ts', 'packages/agent/src/index.ts',
    ]));
  });

  it('no file under apps/*/src, packages/cli/src or packages/agent/src imports @svc/core/internals or a path into core', () => {
    const found = transportFiles().flatMap((rel) => backDoors(rel, readFileSync(path.join(ROOT, rel), 'utf8')));
    expect(found).toEqual([]);
  });

  it('flags the internals entry, a deep path and a relative reach into core, and lets @svc/core through', () => {
    expect(backDoors('apps/api/src/x.ts', "import { findApiKeyByHash } from '@svc/core/internals';\n")).toHaveLength(1);
    expect(backDoors('packages/cli/src/x.ts', "import { createFolder } from '@svc/core/dist/catalog/folders';\n")).toHaveLength(1);
    expect(backDoors('packages/cli/src/workspace/x.ts', "const r = require('../../../core/src/catalog/by-resource');\n")).toHaveLength(1);
    expect(backDoors('apps/dispatcher/src/x.ts', "export { touchApiKeys } from '../../../packages/core/src/api-keys/repo';\n")).toHaveLength(1);
    expect(backDoors('apps/api/src/x.ts', "import { createEngine, type Engine } from '@svc/core';\nimport { ok } from './http/respond';\n")).toEqual([]);
    // a public subpath of core's package.json
    expect(PUBLIC_ENTRIES).toEqual(expect.arrayContaining(['@svc/core', '@svc/core/queue-items/statuses']));
    expect(PUBLIC_ENTRIES).not.toContain('@svc/core/internals');
    expect(backDoors('apps/console/src/x.ts', "import { ITEM_STATUSES } from '@svc/core/queue-items/statuses';\n")).toEqual([]);
  });
});

describe('the public index', () => {
  const repoFiles = walk('packages/core/src', (rel) => rel.endsWith('/repo.ts'));
  /** every value a repository module defines, by its name there */
  const repoExports = new Map<unknown, string>();
  for (const rel of repoFiles) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path.join(ROOT, rel)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) if (name !== '__esModule') repoExports.set(value, `${rel}: ${name}`);
  }

  /** The exports of `index` defined in a repo.ts module (compared by identity, so a rename does not hide one). */
  function repositoryExports(index: Record<string, unknown>): string[] {
    return Object.entries(index)
      .filter(([, value]) => (typeof value === 'function' || (typeof value === 'object' && value !== null)) && repoExports.has(value))
      .map(([name, value]) => `${name} (${repoExports.get(value)})`);
  }

  it('finds the repository modules and what they export (an empty scan would pass on anything)', () => {
    expect(repoFiles.length).toBeGreaterThanOrEqual(5);
    expect(repoFiles).toEqual(expect.arrayContaining(['packages/core/src/api-keys/repo.ts', 'packages/core/src/tenants/repo.ts']));
    expect([...repoExports.keys()].filter((v) => typeof v === 'function').length).toBeGreaterThan(20);
    expect(Object.keys(publicCore)).toContain('createEngine');
  });

  it('exports no repository function: the domain is reached through the engine', () => {
    expect(repositoryExports(publicCore as Record<string, unknown>)).toEqual([]);
  });

  it('would flag one, under any name', () => {
    const [someRepoFunction] = [...repoExports.keys()].filter((v) => typeof v === 'function');
    expect(repositoryExports({ ...publicCore, renamed: someRepoFunction })).toHaveLength(1);
  });
});

describe('the declared surface', () => {
  /** The names an entry module exports, by reading its export lists (types included). */
  function exportedNames(rel: string): string[] {
    const source = readFileSync(path.join(ROOT, rel), 'utf8');
    return [...source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)]
      .flatMap((m) => m[1]!.split(','))
      .map((part) => part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).pop()!.trim())
      .filter(Boolean);
  }
  const ENTRIES = ['index', 'schemas', 'machine-protocol', 'observability'].map((e) => `packages/core/src/${e}.ts`);

  it('reads the entries (an empty read would pass on anything)', () => {
    expect(exportedNames(ENTRIES[0]!)).toEqual(expect.arrayContaining(['createEngine', 'Engine', 'EngineDeps', 'ValidationError', 'createSql']));
    expect(exportedNames(ENTRIES[1]!)).toEqual(expect.arrayContaining(['JobResponse', 'QueueItemResponse', 'FolderCreate']));
    expect(Object.keys(publicSchemas).length + Object.keys(publicProtocol).length + Object.keys(publicObservability).length).toBeGreaterThan(100);
  });

  it('keeps the index to at most 150 names', () => {
    expect(exportedNames(ENTRIES[0]!).length).toBeLessThanOrEqual(150);
  });

  it('shows no storage row and no row-to-response mapper in any public entry: the engine answers records', () => {
    const leaks = ENTRIES.flatMap((rel) => exportedNames(rel).filter((name) => /^to[A-Z]\w*Response$|Row$|^(?:JobWithNames|AssetRecord|BulkAsk)$/.test(name)).map((name) => `${rel}: ${name}`));
    expect(leaks).toEqual([]);
    // and at run time: no exported function of any entry is one of core's mappers
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { toJobResponse, toQueueItemResponse, toFolderResponse } = require('@svc/core/internals') as Record<string, unknown>;
    const values = [publicCore, publicSchemas, publicProtocol, publicObservability].flatMap((m) => Object.values(m));
    for (const mapper of [toJobResponse, toQueueItemResponse, toFolderResponse]) {
      expect(typeof mapper).toBe('function');
      expect(values).not.toContain(mapper);
    }
  });
});
