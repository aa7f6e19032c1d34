import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { specifiers } from './source-scan';

/**
 * Tests by layer (docs/decisions/test-layers.md): a test imports helpers from its own folder or
 * from @svc/testing, never from another workspace's test folder; a workspace's tests reach other
 * workspaces through their package names only; core's tests start no app in-process; and the
 * shared helpers import no test folder.
 */
const ROOT = path.resolve(__dirname, '..');
const WORKSPACES = ['packages/core', 'packages/cli', 'packages/agent', 'packages/testing', 'apps/api', 'apps/dispatcher', 'apps/agent-sim', 'apps/console'];
/** the package names by which one layer reaches an app */
const APP_MODULES = ['@svc/api', '@svc/testing/api'];


/** The folder `test/` (or for the shared helpers `src/`) whose files may import each other, and the file's workspace. */
function homeOf(rel: string): { workspace: string | null; folder: string } {
  const workspace = WORKSPACES.find((w) => rel.startsWith(`${w}/`)) ?? null;
  const at = rel.split('/').indexOf('test');
  const folder = at >= 0 ? rel.split('/').slice(0, at + 1).join('/') : path.posix.dirname(rel);
  return { workspace, folder };
}

const isTestFolder = (rel: string) => rel.split('/').includes('test');
const inside = (rel: string, folder: string) => rel === folder || rel.startsWith(`${folder}/`);

/** What is wrong with the imports of the file at `rel` (a path from the repository root). */
export function violations(rel: string, source: string): string[] {
  const { workspace, folder } = homeOf(rel);
  const found: string[] = [];
  for (const spec of specifiers(source)) {
    if (workspace === 'packages/core' && APP_MODULES.includes(spec)) {
      found.push(`${rel}: core's tests start no app, but it imports ${spec}`);
    }
    if (!spec.startsWith('.')) continue;
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec));
    if (isTestFolder(target) && !inside(target, folder)) {
      found.push(`${rel}: imports another test folder's ${target} (shared helpers belong in packages/testing)`);
    } else if (workspace && !inside(target, workspace)) {
      found.push(`${rel}: reaches into ${target} outside ${workspace} (import it by its package name)`);
    }
  }
  return found;
}

/** The files under the test folders of the repository, and the shared helpers' sources. */
function checkedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(path.join(ROOT, dir))) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const rel = dir ? `${dir}/${name}` : name;
      if (statSync(path.join(ROOT, rel)).isDirectory()) walk(rel);
      else if (/\.(?:ts|mts|cts|js|mjs)$/.test(name) && (isTestFolder(rel) || inside(rel, 'packages/testing/src'))) out.push(rel);
    }
  };
  for (const top of ['apps', 'packages', 'test', 'bench']) walk(top);
  return out;
}

describe('test layers', () => {
  it('finds the test files (a scan that saw none would pass on anything)', () => {
    const files = checkedFiles();
    expect(files).toEqual(expect.arrayContaining([
      'packages/core/test/jsonb.test.ts', 'apps/api/test/auth.test.ts', 'apps/dispatcher/test/scale-out.test.ts',
      'apps/agent-sim/test/options.test.ts', 'packages/cli/test/cli.test.ts', 'packages/testing/src/index.ts', 'test/layers.test.ts',
    ]));
  });

  it('every test imports helpers from its own folder or @svc/testing, and core tests start no app', () => {
    const found = checkedFiles().flatMap((rel) => violations(rel, readFileSync(path.join(ROOT, rel), 'utf8')));
    expect(found).toEqual([]);
  });

  it('flags an import of another workspace test folder, a reach into another workspace, and an app in core tests', () => {
    expect(violations('apps/dispatcher/test/x.test.ts', "import { createApiTestContext } from '../../api/test/helpers';\n")).toHaveLength(1);
    expect(violations('packages/core/test/x.test.ts', "import {\n  Children,\n} from '../../../apps/dispatcher/test/support';\n")).toHaveLength(1);
    expect(violations('packages/cli/test/x.test.ts', "const h = require('../../core/src/index');\n")).toHaveLength(1);
    expect(violations('packages/core/test/x.test.ts', "import { apiSuite } from '@svc/testing/api';\n")).toHaveLength(1);
    expect(violations('packages/testing/src/x.ts', "export * from '../../../apps/api/test/jobs-support';\n")).toHaveLength(1);
    expect(violations('test/x.test.ts', "import { seedTenant } from '../packages/core/test/support';\n")).toHaveLength(1);
  });

  it('lets a test import its own folder, its own sources and @svc/testing', () => {
    const ok = [
      "import { bearer } from './settings-fixtures';",
      "import { routeCatalog } from '../src/http/route';",
      "import { seedTenant, testSuite } from '@svc/testing';",
      "import { apiSuite } from '@svc/testing/api';",
    ].join('\n');
    expect(violations('apps/api/test/x.test.ts', ok)).toEqual([]);
  });
});

describe('the core surface', () => {
  const index = readFileSync(path.join(ROOT, 'packages/core/src/index.ts'), 'utf8');

  it('names every export of @svc/core (no `export *`: a reader sees what is public)', () => {
    expect(index).toMatch(/export \{ createEngine \} from '\.\/engine';/);
    expect(index.match(/export \*/g) ?? []).toEqual([]);
  });

  it('keeps SQL out of the transports: no statement in any app or the CLI', () => {
    const offenders = transportSources().filter((rel) => sqlStatements(readFileSync(path.join(ROOT, rel), 'utf8')).length > 0);
    expect(offenders).toEqual([]);
  });

  it('finds every app and the CLI (a scan that saw none would pass on anything)', () => {
    const files = transportSources();
    for (const dir of [...readdirSync(path.join(ROOT, 'apps')).map((app) => `apps/${app}/src/`), 'packages/cli/src/']) {
      expect(files.some((rel) => rel.startsWith(dir))).toBe(true);
    }
  });

  it('would flag a tagged statement (typed or not), a raw one and a transaction', () => {
    expect(sqlStatements('const rows = await sql`select 1`;')).toHaveLength(1);
    expect(sqlStatements('const [row] = await sql<{ version: number }[]>`select max(version) from schema_migrations`;')).toHaveLength(1);
    expect(sqlStatements('await tx<Array<{ id: string }>>`update jobs set status = ${s}`;')).toHaveLength(1);
    expect(sqlStatements('await admin.unsafe(`create database "x"`);')).toHaveLength(1);
    expect(sqlStatements('await pool.begin(async (t) => t`select 1`);')).toHaveLength(2);
    expect(sqlStatements('const msg = `select ${n} items`; const el = html`<p/>`; const t = es.items.added(`x`);')).toEqual([]);
  });
});

/** Every source file of the apps (whatever apps/ holds) and of the CLI. */
function transportSources(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(path.join(ROOT, dir))) {
      if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
      const rel = `${dir}/${name}`;
      if (statSync(path.join(ROOT, rel)).isDirectory()) walk(rel);
      else if (/\.(?:ts|tsx|mts|cts|js|mjs|cjs)$/.test(name)) out.push(rel);
    }
  };
  for (const app of readdirSync(path.join(ROOT, 'apps'))) if (existsSync(path.join(ROOT, 'apps', app, 'src'))) walk(`apps/${app}/src`);
  walk('packages/cli/src');
  return out;
}

/**
 * The statements in `source`: a template tagged by a database handle's usual names, with or without
 * a row type (`sql<T[]>\`…\``), and the driver's raw and transaction calls.
 */
export function sqlStatements(source: string): string[] {
  const tagged = /\b(?:sql|tx|q|db|trx|pool|t)\s*(?:<(?:[^<>`]|<(?:[^<>`]|<[^<>`]*>)*>)*>)?\s*`/g;
  const calls = /\.(?:unsafe|begin|file)\(/g;
  return [...source.matchAll(tagged), ...source.matchAll(calls)].map((m) => m[0]);
}

describe('the robot SDK', () => {
  it('holds no database, Redis or platform code: only ws, the outbound proxy\'s agent and Node (a robot holds its machine key alone)', () => {
    const dir = path.join(ROOT, 'packages/agent/src');
    const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(1);
    const external = files.flatMap((f) => specifiers(readFileSync(path.join(dir, f), 'utf8')).filter((s) => !s.startsWith('.')));
    expect([...new Set(external)].sort()).toEqual(['https-proxy-agent', 'node:http', 'node:os', 'proxy-from-env', 'ws']);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'packages/agent/package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies)).toEqual(['https-proxy-agent', 'proxy-from-env', 'ws']);
  });
});

describe('agent-sim', () => {
  it('is a robot on the SDK: from @svc/core it takes only logging, metrics, tracing and signal handling, and no Redis or BullMQ', () => {
    const dir = path.join(ROOT, 'apps/agent-sim/src');
    const sources = readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => readFileSync(path.join(dir, f), 'utf8'));
    const external = new Set(sources.flatMap((src) => specifiers(src).filter((s) => !s.startsWith('.'))));
    expect([...external].sort()).toEqual(['@svc/agent', '@svc/core', '@svc/core/machine-protocol', '@svc/core/observability', 'node:fs', 'node:util']);
    const fromCore = new Set(sources.flatMap((src) => [...src.matchAll(/import (?:type )?\{([^}]*)\} from '@svc\/core(?:\/[a-z-]+)?'/g)]
      .flatMap((m) => m[1]!.split(',').map((n) => n.trim().replace(/^type /, '')).filter(Boolean))));
    const allowed = new Set(['MAX_TAKE', 'Logger', 'createLogger', 'onShutdownSignals', 'startMetricsServer', 'startTracing', 'stopTracing', 'SpanKind', 'withSpan', 'withTraceCarrier', 'currentTraceCarrier']);
    expect([...fromCore].filter((n) => !allowed.has(n))).toEqual([]);
    expect(fromCore.has('createLogger')).toBe(true);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'apps/agent-sim/package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['@svc/agent', '@svc/core']);
  });
});
