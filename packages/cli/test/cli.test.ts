import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSql } from '@svc/core';
import { sha256, verifyPassword } from '@svc/core/internals';
import { databaseUrl, testEnv } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { spawn } from 'node:child_process';
import { BIN, ROOT, runCli, type Run } from './cli-harness';

/** The real compiled CLI (cli-harness.ts) against this file's own database. */
const EXAMPLE = path.join(ROOT, 'examples', 'workspace.json');

/** a test runs the CLI up to six times, each a fresh Node process: seconds apiece on a loaded two-core host */
jest.setTimeout(60_000);
let t: ApiTestContext;
let baseEnv: Record<string, string>;
const tmp = mkdtempSync(path.join(tmpdir(), 'svc-cli-test-'));

const svc = (args: string[], opts: { env?: Record<string, string | undefined>; input?: string } = {}): Promise<Run> => runCli(baseEnv, args, opts);

const json = (r: Run) => JSON.parse(r.stdout);
/** The one-line error (without --json) or the JSON error document (with --json) on stderr. */
const errorLine = (r: Run) => r.stderr.trim();

function writeFile(name: string, content: unknown): string {
  const file = path.join(tmp, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

beforeAll(async () => {
  t = await createApiTestContext();
  baseEnv = { ...t.childEnv };
});
afterAll(() => t.close());

describe('svc tenant', () => {
  it('creates a tenant with features, quota and subscription, printing the record as JSON', async () => {
    const r = await svc(['tenant', 'create', '--name', 'cli-acme', '--features', 'webhooks', '--quota', '500', '--subscription', 'trialing', '--json']);
    expect(r.code).toBe(0);
    const tenant = json(r);
    expect(Object.keys(tenant).sort()).toEqual(
      [
        'created_at', 'id', 'job_retention_action', 'job_retention_days', 'monthly_quota', 'name', 'plan', 'plan_features', 'quota_period', 'quota_used',
        'subscription_status', 'updated_at',
      ],
    );
    expect(tenant).toMatchObject({
      name: 'cli-acme', plan: 'standard', plan_features: ['webhooks'], subscription_status: 'trialing', monthly_quota: 500, quota_used: 0,
    });
    const [row] = await t.sql`select plan_features, monthly_quota from tenants where id = ${tenant.id}`;
    expect(row).toEqual({ plan_features: ['webhooks'], monthly_quota: 500 });
  });

  it('prints a readable record without --json, with the defaults of a new tenant', async () => {
    const r = await svc(['tenant', 'create', '--name', 'cli-plain']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Created tenant cli-plain\n/);
    expect(r.stdout).toMatch(/plan_features\s+api_keys, webhooks/);
    expect(r.stdout).toMatch(/monthly_quota\s+10000/);
    expect(r.stderr).toBe('');
  });

  it('refuses a duplicate name with exit code 4 and one line', async () => {
    const r = await svc(['tenant', 'create', '--name', 'cli-acme']);
    expect(r.code).toBe(4);
    expect(r.stdout).toBe('');
    expect(errorLine(r)).toBe('svc: Ya existe un tenant con ese nombre');
    const j = await svc(['tenant', 'create', '--name', 'cli-acme', '--json']);
    expect(j.code).toBe(4);
    expect(JSON.parse(j.stderr)).toEqual({ success: false, error: { code: 'CONFLICT', message: 'Ya existe un tenant con ese nombre' } });
  });

  it('refuses invalid values with exit code 2, naming the flags', async () => {
    const r = await svc(['tenant', 'create', '--name', 'cli-bad', '--features', 'api_keys,teleport', '--quota', 'lots', '--json']);
    expect(r.code).toBe(2);
    const err = JSON.parse(r.stderr).error;
    expect(err.code).toBe('VALIDATION_ERROR');
    expect(err.details.map((d: { field: string }) => d.field).sort()).toEqual(['--features → 1', '--quota']);
    const [{ n }] = await t.sql`select count(*)::int as n from tenants where name = 'cli-bad'`;
    expect(n).toBe(0);
  });

  it('changes only the given fields of a tenant named by name, and shows what changed', async () => {
    const r = await svc(['tenant', 'update', 'cli-acme', '--quota', '750', '--features', 'api_keys,webhooks']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Updated tenant cli-acme');
    expect(r.stdout).toContain('monthly_quota: 500 → 750');
    expect(r.stdout).toContain('plan_features: webhooks → api_keys, webhooks');
    const shown = json(await svc(['tenant', 'show', 'cli-acme', '--json']));
    expect(shown).toMatchObject({ monthly_quota: 750, plan_features: ['api_keys', 'webhooks'], subscription_status: 'trialing' });
    const again = await svc(['tenant', 'update', shown.id, '--subscription', 'trialing']);
    expect(again.stdout.trim()).toBe('Tenant cli-acme unchanged');
    const j = json(await svc(['tenant', 'update', shown.id, '--subscription', 'active', '--json']));
    expect(j).toMatchObject({ id: shown.id, subscription_status: 'active', monthly_quota: 750 });
  });

  it('answers an unknown tenant with exit code 3 and an update without changes with exit code 2', async () => {
    const r = await svc(['tenant', 'show', 'no-such-tenant']);
    expect(r.code).toBe(3);
    expect(errorLine(r)).toBe('svc: Tenant no encontrado: no-such-tenant');
    const u = await svc(['tenant', 'update', 'cli-acme']);
    expect(u.code).toBe(2);
    expect(errorLine(u)).toMatch(/^svc: nothing to change/);
  });

  it('lists tenants as a JSON array and as a table', async () => {
    const j = await svc(['tenant', 'list', '--json']);
    expect(j.code).toBe(0);
    const names = json(j).map((x: { name: string }) => x.name);
    expect(names).toEqual(expect.arrayContaining(['cli-acme', 'cli-plain']));
    const r = await svc(['tenant', 'list']);
    expect(r.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+PLAN\s+FEATURES\s+SUBSCRIPTION\s+QUOTA\s+USED$/);
    expect(r.stdout).toContain('cli-acme');
  });
});

describe('svc user and svc token', () => {
  let tenantId: string;
  beforeAll(async () => {
    tenantId = json(await svc(['tenant', 'create', '--name', 'cli-users', '--json'])).id;
  });

  it('creates a user with a scrypt-hashed password and prints it as JSON', async () => {
    const r = await svc(['user', 'create', '--tenant', 'cli-users', '--email', 'Op@Example.test', '--password-stdin', '--role', 'admin', '--name', 'Op', '--json'], { input: 'operator-pass' });
    expect(r.code).toBe(0);
    const user = json(r);
    expect(user).toEqual({
      id: expect.any(String), email: 'Op@Example.test', name: 'Op', role: 'admin', tenant_id: tenantId, is_active: true, must_change_password: false,
      created_at: expect.any(String), tenant_name: 'cli-users',
    });
    const [row] = await t.sql`select password_hash from users where id = ${user.id}`;
    expect(row!.password_hash).toMatch(/^scrypt\$/);
    expect(await verifyPassword('operator-pass', row!.password_hash as string)).toBe(true);
  });

  it('reads the password from standard input with --password-stdin', async () => {
    const r = await svc(['user', 'create', '--tenant', tenantId, '--email', 'member@example.test', '--role', 'member', '--password-stdin'], { input: 'piped-password\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Created member member@example.test in tenant cli-users/);
    const login = await t.http.post('/api/v1/auth/login').send({ email: 'member@example.test', password: 'piped-password' });
    expect(login.status).toBe(200);
  });

  it('refuses a taken email in another letter case (4), a short password (2), a bad role (2) and an unknown tenant (3)', async () => {
    const dup = await svc(['user', 'create', '--tenant', 'cli-users', '--email', 'OP@example.TEST', '--password-stdin', '--role', 'admin'], { input: 'operator-pass' });
    expect(dup.code).toBe(4);
    expect(errorLine(dup)).toBe('svc: Ya existe un usuario con ese email');
    const short = await svc(['user', 'create', '--tenant', 'cli-users', '--email', 'x@example.test', '--password-stdin', '--role', 'admin'], { input: 'short\n' });
    expect(short.code).toBe(2);
    expect(errorLine(short)).toMatch(/^svc: Error de validación \(password: /);
    const role = await svc(['user', 'create', '--tenant', 'cli-users', '--email', 'x@example.test', '--password-stdin', '--role', 'owner'], { input: 'longenough' });
    expect(role.code).toBe(2);
    expect(errorLine(role)).toMatch(/--role must be one of admin, member/);
    const tenant = await svc(['user', 'create', '--tenant', 'nowhere', '--email', 'x@example.test', '--password-stdin', '--role', 'admin'], { input: 'longenough' });
    expect(tenant.code).toBe(3);
    const [{ n }] = await t.sql`select count(*)::int as n from users where lower(email) = 'x@example.test'`;
    expect(n).toBe(0);
  });

  it('issues an access token, printed once, that authenticates at /auth/me with the user\'s role', async () => {
    const before = Date.now();
    const r = await svc(['token', 'issue', '--email', 'op@example.test', '--ttl', '600', '--json']);
    expect(r.code).toBe(0);
    const issued = json(r);
    expect(Object.keys(issued).sort()).toEqual(['expires_at', 'id', 'prefix', 'tenant_id', 'token', 'user', 'user_id']);
    expect(issued.token).toMatch(/^svc_at_/);
    expect(issued.prefix).toBe(issued.token.slice(0, 12));
    // 600 s from the moment it was issued, which lies between before and now (starting the CLI
    // process can take seconds on a loaded host); 1 s for the rounding of either clock
    const expiresAt = new Date(issued.expires_at).getTime();
    expect(expiresAt).toBeGreaterThanOrEqual(before + 600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000 + 1000);
    const [row] = await t.sql`select token_hash from access_tokens where id = ${issued.id}`;
    expect((row!.token_hash as Buffer).equals(sha256(issued.token))).toBe(true);
    const me = await t.http.get('/api/v1/auth/me').set('Authorization', `Bearer ${issued.token}`);
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ email: 'Op@Example.test', role: 'admin', tenant_id: tenantId });
  });

  it('prints the token readably with how to use and revoke it', async () => {
    const r = await svc(['token', 'issue', '--email', 'member@example.test']);
    expect(r.code).toBe(0);
    const token = /^\s+(svc_at_\S+)$/m.exec(r.stdout)?.[1];
    expect(token).toBeDefined();
    expect(r.stdout).toContain('It is shown only this once');
    const [row] = await t.sql`select expires_at - created_at as ttl, extract(epoch from expires_at - created_at)::int as secs from access_tokens where token_hash = ${sha256(token!)}`;
    expect(row!.secs).toBe(3600);
  });

  it('refuses an unknown email (3) and a lifetime under a minute (2)', async () => {
    const unknown = await svc(['token', 'issue', '--email', 'ghost@example.test']);
    expect(unknown.code).toBe(3);
    const ttl = await svc(['token', 'issue', '--email', 'op@example.test', '--ttl', '5', '--json']);
    expect(ttl.code).toBe(2);
    expect(JSON.parse(ttl.stderr).error.details[0].field).toBe('--ttl');
  });

  it('revokes a token by prefix, by id and by whole value; a revoked token answers 401', async () => {
    const a = json(await svc(['token', 'issue', '--email', 'op@example.test', '--json']));
    const byPrefix = await svc(['token', 'revoke', a.prefix, '--json']);
    expect(byPrefix.code).toBe(0);
    expect(json(byPrefix)).toMatchObject({ id: a.id, prefix: a.prefix, already_revoked: false, revoked_at: expect.any(String) });
    expect((await t.http.get('/api/v1/auth/me').set('Authorization', `Bearer ${a.token}`)).status).toBe(401);
    const again = await svc(['token', 'revoke', a.id]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('was already revoked');
    const b = json(await svc(['token', 'issue', '--email', 'op@example.test', '--json']));
    expect((await svc(['token', 'revoke', b.token])).code).toBe(0);
    expect((await t.http.get('/api/v1/auth/me').set('Authorization', `Bearer ${b.token}`)).status).toBe(401);
    const missing = await svc(['token', 'revoke', 'svc_at_XXXXX']);
    expect(missing.code).toBe(3);
    expect(errorLine(missing)).toBe('svc: no access token matches "svc_at_XXXXX"');
  });

  it('deactivates a user, whose tokens then answer 401 and who can no longer log in', async () => {
    const tok = json(await svc(['token', 'issue', '--email', 'member@example.test', '--json']));
    const r = await svc(['user', 'deactivate', 'member@example.test', '--json']);
    expect(r.code).toBe(0);
    expect(json(r)).toMatchObject({ email: 'member@example.test', is_active: false });
    expect((await t.http.get('/api/v1/auth/me').set('Authorization', `Bearer ${tok.token}`)).status).toBe(401);
    const login = await t.http.post('/api/v1/auth/login').send({ email: 'member@example.test', password: 'piped-password' });
    expect(login.status).toBe(401);
  });

  it('lists the users of a tenant', async () => {
    const r = await svc(['user', 'list', '--tenant', 'cli-users', '--json']);
    expect(r.code).toBe(0);
    expect(json(r).map((u: { email: string; is_active: boolean }) => [u.email, u.is_active])).toEqual([
      ['Op@Example.test', true],
      ['member@example.test', false],
    ]);
  });
});

/**
 * Runs the CLI on a pseudo-terminal (util-linux `script`), answering each prompt once it shows:
 * what the terminal sends back is everything the operator would see.
 */
function svcOnTerminal(args: string[], answers: string[]): Promise<Run> {
  const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, BIN, ...args].map(quote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...baseEnv } });
    let screen = '';
    let asked = 0;
    child.stdout.on('data', (d) => {
      screen += d;
      // the n-th prompt answered once the n-th "Password…: " is on the screen
      const prompts = screen.match(/Password( again)?: /g)?.length ?? 0;
      while (asked < prompts && asked < answers.length) child.stdin.write(`${answers[asked++]}\r`);
      // a prompt nobody is to answer: end the terminal (its command gets SIGHUP) rather than wait
      if (prompts > answers.length) child.kill();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: screen, stderr: '' }));
  });
}

describe('svc user passwords: never on the command line', () => {
  let tenantId: string;
  beforeAll(async () => {
    tenantId = json(await svc(['tenant', 'create', '--name', 'cli-passwords', '--json'])).id;
    expect((await svc(['user', 'create', '--tenant', tenantId, '--email', 'kept@example.test', '--role', 'admin', '--password-stdin'], { input: 'kept-password' })).code).toBe(0);
  });
  const login = (email: string, password: string) => t.http.post('/api/v1/auth/login').send({ email, password });
  const users = async () => (await t.sql`select email from users where tenant_id = ${tenantId} order by email`).map((u) => u.email);

  it('refuses --password in every form with exit code 2, saying to use the prompt or --password-stdin, and changes nothing', async () => {
    const message = 'svc: --password is not accepted (a password on the command line is seen in the process list and the shell history): leave it out to be asked for it on the terminal, or pipe it with --password-stdin — see svc user --help';
    for (const args of [
      ['user', 'create', '--tenant', 'cli-passwords', '--email', 'flag@example.test', '--role', 'admin', '--password', 'flag-password'],
      ['user', 'create', '--tenant', 'cli-passwords', '--email', 'flag@example.test', '--role', 'admin', '--password=flag-password'],
      ['user', 'create', '--tenant', 'cli-passwords', '--email', 'flag@example.test', '--role', 'admin', '--password'],
      ['user', 'create', '--password', 'flag-password', '--tenant', 'cli-passwords', '--email', 'flag@example.test', '--role', 'admin', '--password-stdin'],
      ['user', 'set-password', 'kept@example.test', '--password', 'flag-password'],
    ]) {
      const r = await svc(args, { input: 'stdin-password\n' });
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 2, stderr: `${message}\n` });
      expect(r.stdout).toBe('');
    }
    expect(await users()).toEqual(['kept@example.test']);
    // set-password left the user alone
    expect((await login('kept@example.test', 'flag-password')).status).toBe(401);
    expect((await login('kept@example.test', 'kept-password')).status).toBe(200);
  });

  it('creates a user and sets a password with --password-stdin', async () => {
    const created = await svc(['user', 'create', '--tenant', 'cli-passwords', '--email', 'piped@example.test', '--role', 'admin', '--password-stdin', '--json'], { input: 'first-piped-pw\n' });
    expect(created.code).toBe(0);
    expect(json(created)).toMatchObject({ email: 'piped@example.test', tenant_id: tenantId });
    expect((await login('piped@example.test', 'first-piped-pw')).status).toBe(200);
    const changed = await svc(['user', 'set-password', 'piped@example.test', '--password-stdin'], { input: 'second-piped-pw' });
    expect(changed.code).toBe(0);
    expect(changed.stdout).toBe('Password of piped@example.test changed\n');
    expect((await login('piped@example.test', 'first-piped-pw')).status).toBe(401);
    expect((await login('piped@example.test', 'second-piped-pw')).status).toBe(200);
  });

  it('without --password-stdin and without a terminal, says to pipe it (2) and reads nothing', async () => {
    const r = await svc(['user', 'create', '--tenant', 'cli-passwords', '--email', 'noterm@example.test', '--role', 'member'], { input: 'piped-but-not-asked\n' });
    expect(r.code).toBe(2);
    expect(errorLine(r)).toBe('svc: standard input is not a terminal to ask for the password on: pipe it with --password-stdin — see svc user --help');
    expect(await users()).not.toContain('noterm@example.test');
  });

  it('asks on a terminal twice without echoing, for create and set-password; two different answers change nothing', async () => {
    const created = await svcOnTerminal(['user', 'create', '--tenant', 'cli-passwords', '--email', 'typed@example.test', '--role', 'member'], ['typed-password-1', 'typed-password-1']);
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('Password: ');
    expect(created.stdout).toContain('Password again: ');
    expect(created.stdout).toContain('Created member typed@example.test in tenant cli-passwords');
    expect(created.stdout).not.toContain('typed-password');
    expect((await login('typed@example.test', 'typed-password-1')).status).toBe(200);

    const differ = await svcOnTerminal(['user', 'set-password', 'typed@example.test'], ['typed-password-2', 'typed-password-3']);
    expect(differ.code).toBe(2);
    expect(differ.stdout).toContain('svc: the two passwords differ; nothing was changed');
    expect(differ.stdout).not.toContain('typed-password');
    expect((await login('typed@example.test', 'typed-password-1')).status).toBe(200);

    const changed = await svcOnTerminal(['user', 'set-password', 'typed@example.test'], ['typed-password-4', 'typed-password-4']);
    expect(changed.code).toBe(0);
    expect(changed.stdout).toContain('Password of typed@example.test changed');
    expect(changed.stdout).not.toContain('typed-password');
    expect((await login('typed@example.test', 'typed-password-4')).status).toBe(200);

    // an unknown user is said before anything is asked
    const unknown = await svcOnTerminal(['user', 'set-password', 'ghost@example.test'], []);
    expect(unknown.code).toBe(3);
    expect(unknown.stdout).not.toContain('Password');
  });
});

describe('svc usage and failures', () => {
  it('prints usage and exits 2 without a command, 0 with --help', async () => {
    const none = await svc([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: svc <command>');
    const help = await svc(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/tenant .*\n.*user .*\n.*token .*\n.*apply /);
    const sub = await svc(['tenant', 'create', '--help']);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toContain('svc tenant create --name NAME');
  });

  it('answers an unknown command, subcommand or flag with exit code 2 and one line', async () => {
    for (const args of [['teleport'], ['tenant', 'delete', 'x'], ['tenant', 'create', '--nme', 'x'], ['tenant', 'create'], ['tenant', 'create', '--name', 'n1', '--quota', '-3']]) {
      const r = await svc(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^svc: /);
    }
  });

  it('says in one line that Postgres is unreachable, with exit code 1 and no password', async () => {
    const r = await svc(['tenant', 'list'], { env: { DATABASE_URL: 'postgres://postgres:hunter2@127.0.0.1:1/svc' } });
    expect(r.code).toBe(1);
    expect(errorLine(r)).toBe(
      'svc: cannot reach Postgres at postgres://postgres:***@127.0.0.1:1/svc (ECONNREFUSED): start it, or point DATABASE_URL at a running server',
    );
  });

  it('creates and migrates a database that does not exist yet before acting', async () => {
    const env = testEnv();
    const name = `${env.templateDb.replace(/_tpl$/, '')}_fresh_cli`;
    const url = databaseUrl(env.adminUrl, name);
    const admin = createSql(env.adminUrl, { max: 1 });
    try {
      const r = await svc(['tenant', 'create', '--name', 'fresh', '--json'], { env: { DATABASE_URL: url } });
      expect(r.code).toBe(0);
      const fresh = createSql(url, { max: 1 });
      try {
        const [{ n }] = await fresh`select count(*)::int as n from schema_migrations`;
        expect(n).toBeGreaterThan(0);
        expect((await fresh`select name from tenants`).map((x) => x.name)).toEqual(['fresh']);
      } finally {
        await fresh.end();
      }
    } finally {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  });
});

describe('svc apply', () => {
  let tenantId: string;
  beforeAll(async () => {
    tenantId = json(await svc(['tenant', 'create', '--name', 'cli-apply', '--json'])).id;
  });

  async function snapshot() {
    return {
      folders: await t.sql`select * from folders where tenant_id = ${tenantId} order by name`,
      processes: await t.sql`select * from processes where tenant_id = ${tenantId} order by name`,
      machines: await t.sql`select * from machines where tenant_id = ${tenantId} order by name`,
      queues: await t.sql`select * from queues where tenant_id = ${tenantId} order by name`,
      assets: await t.sql`select * from assets where tenant_id = ${tenantId} order by name`,
      values: await t.sql`select v.* from asset_values v join assets a on a.id = v.asset_id where a.tenant_id = ${tenantId} order by a.name, v.environment`,
      schedules: await t.sql`select * from schedules where tenant_id = ${tenantId} order by name`,
    };
  }

  it('creates everything in the example file and prints each machine key once', async () => {
    const r = await svc(['apply', EXAMPLE, '--tenant', 'cli-apply', '--json']);
    expect(r.code).toBe(0);
    const report = json(r);
    expect(report.tenant).toEqual({ id: tenantId, name: 'cli-apply' });
    expect(report.dry_run).toBe(false);
    expect(report.summary).toEqual({ created: 10, updated: 0, unchanged: 0 });
    expect(report.resources.map((x: { kind: string; name: string; action: string }) => `${x.kind}:${x.name}:${x.action}`)).toEqual([
      'folder:Finance:created',
      'process:invoice-processing:created',
      'process:archive-invoices:created',
      'machine:robot-01:created',
      'machine:robot-02:created',
      'queue:invoices:created',
      'asset:erp-url:created',
      'asset:max-invoice-amount:created',
      'asset:erp-credentials:created',
      'schedule:month-end-archive:created',
    ]);
    const machines = report.resources.filter((x: { kind: string }) => x.kind === 'machine');
    for (const m of machines) {
      expect(m.machine_key).toMatch(/^svc_mk_/);
      const [row] = await t.sql`select machine_key_hash from machines where id = ${m.id}`;
      expect((row!.machine_key_hash as Buffer).equals(sha256(m.machine_key))).toBe(true);
    }
    expect(report.resources.filter((x: { machine_key?: string }) => x.machine_key)).toHaveLength(2);

    const s = await snapshot();
    const invoice = s.processes.find((p) => p.name === 'invoice-processing')!;
    const archive = s.processes.find((p) => p.name === 'archive-invoices')!;
    expect(invoice).toMatchObject({
      folder_id: s.folders[0]!.id, timeout_seconds: 600, max_retries: 2, auto_retry: true, retry_delay_seconds: 30,
      tags: ['finance', 'erp'], sla_deadline_minutes: 60, on_success_trigger_process_id: archive.id,
      required_assets: ['erp-url', 'erp-credentials'],
    });
    expect(invoice.input_schema).toMatchObject({ required: ['invoice'] });
    expect(s.queues[0]).toMatchObject({ name: 'invoices', consumer_process_id: invoice.id, max_consumers: 2, max_retries: 3 });
    expect(s.machines.map((m) => [m.name, m.slots])).toEqual([['robot-01', 2], ['robot-02', 1]]);
    expect(s.schedules[0]).toMatchObject({
      name: 'month-end-archive', process_id: archive.id, machine_id: s.machines[1]!.id, cron: '0 19 * * 1-5', timezone: 'Europe/Madrid',
      input_data: { older_than_days: 30 }, priority: 3, is_active: true, missed_runs: 'run_once',
    });
    expect((s.schedules[0]!.next_run_at as Date).getTime()).toBeGreaterThan(Date.now());
    const cred = s.values.find((v) => v.secret !== null)!;
    expect(cred.value).toBeNull();
    expect((cred.secret as Buffer).toString('latin1')).not.toContain('dev-only-password');
  });

  it('changes nothing when the same file is applied again', async () => {
    const before = await snapshot();
    const r = await svc(['apply', EXAMPLE, '--tenant', tenantId, '--json']);
    expect(r.code).toBe(0);
    const report = json(r);
    expect(report.summary).toEqual({ created: 0, updated: 0, unchanged: 10 });
    expect(report.resources.every((x: { action: string; machine_key?: string }) => x.action === 'unchanged' && !x.machine_key)).toBe(true);
    expect(await snapshot()).toEqual(before);
  });

  it('changes in place exactly what a file changes, and a third run changes nothing', async () => {
    const doc = JSON.parse(readFileSync(EXAMPLE, 'utf8'));
    doc.processes[0].timeout_seconds = 900;
    doc.processes[0].input_schema.required = ['invoice', 'amount'];
    doc.processes[0].on_success = null;
    doc.machines[1].slots = 4;
    doc.machines[1].kind = 'attended';
    doc.machines[1].environments = ['staging'];
    doc.queues[0].consumer = 'archive-invoices';
    doc.assets[2].values.dev.password = { $env: 'SVC_ASSET_CLI_TEST_ERP_PASSWORD' };
    doc.assets[1].values.production = { $env: 'SVC_ASSET_CLI_TEST_MAX' };
    doc.folders.push({ name: 'Archive' });
    doc.schedules[0].cron = '0 20 * * 1-5';
    doc.schedules[0].machine = null;
    const file = writeFile('changed.json', doc);
    const env = { SVC_ASSET_CLI_TEST_ERP_PASSWORD: 'rotated-password', SVC_ASSET_CLI_TEST_MAX: '50000' };
    const r = await svc(['apply', file, '--tenant', 'cli-apply', '--json'], { env });
    expect(r.code).toBe(0);
    const report = json(r);
    const byName = Object.fromEntries(report.resources.map((x: { name: string }) => [x.name, x]));
    expect(report.summary).toEqual({ created: 1, updated: 5, unchanged: 5 });
    expect(byName['Archive'].action).toBe('created');
    expect(byName['invoice-processing'].changed.sort()).toEqual(['input_schema', 'on_success', 'timeout_seconds']);
    expect(byName['robot-02'].changed.sort()).toEqual(['environments', 'kind', 'slots']);
    expect(byName['invoices'].changed).toEqual(['consumer']);
    expect(byName['month-end-archive'].changed.sort()).toEqual(['cron', 'machine']);
    expect(byName['erp-credentials'].changed).toEqual(['values.dev']);
    // an env value spelling the same integer is the same value
    expect(byName['max-invoice-amount'].action).toBe('unchanged');

    const s = await snapshot();
    const invoice = s.processes.find((p) => p.name === 'invoice-processing')!;
    expect(invoice).toMatchObject({ timeout_seconds: 900, on_success_trigger_process_id: null, max_retries: 2 });
    const [robot02] = await t.sql`select kind from machines where tenant_id = ${tenantId} and name = 'robot-02'`;
    expect(robot02!.kind).toBe('attended');
    // the queue's consumer is its default trigger (docs/decisions/triggers.md)
    const archive = s.processes.find((p) => p.name === 'archive-invoices')!;
    const defaults = await t.sql`select t.process_id, t.is_active from triggers t join queues q on q.id = t.queue_id
      where q.tenant_id = ${tenantId} and q.name = 'invoices' and t.is_queue_default`;
    expect(defaults).toEqual([{ process_id: archive.id, is_active: true }]);
    const third = json(await svc(['apply', file, '--tenant', 'cli-apply', '--json'], { env }));
    expect(third.summary).toEqual({ created: 0, updated: 0, unchanged: 11 });
    expect(await snapshot()).toEqual(s);
  });

  it('reports a dry run and rolls it back', async () => {
    const before = await snapshot();
    const doc = { queues: [{ name: 'invoices', max_consumers: 7 }, { name: 'brand-new' }], machines: [{ name: 'robot-03' }] };
    const r = await svc(['apply', writeFile('dry.json', doc), '--tenant', 'cli-apply', '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Dry run of');
    expect(r.stdout).toContain('1 updated');
    expect(r.stdout).toMatch(/~ queue\s+invoices\s+\(max_consumers\)/);
    expect(r.stdout).toMatch(/\+ machine\s+robot-03/);
    expect(r.stdout).not.toContain('svc_mk_');
    expect(await snapshot()).toEqual(before);
  });

  it('prints a readable report with the new machine keys', async () => {
    const r = await svc(['apply', writeFile('machine.json', { machines: [{ name: 'robot-09', slots: 3 }] }), '--tenant', 'cli-apply']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/: 1 created, 0 updated, 0 unchanged/);
    expect(r.stdout).toMatch(/\+ machine\s+robot-09/);
    expect(r.stdout).toMatch(/Machine keys, shown only this once/);
    expect(r.stdout).toMatch(/robot-09\s+svc_mk_\S+/);
  });

  it('refuses an invalid file with exit code 2, naming the entry and field, and applies nothing of it', async () => {
    const before = await snapshot();
    const bad = {
      folders: [{ name: 'Never' }],
      processes: [{ name: 'p1', timeout_seconds: 0 }],
      queues: [{ name: 'q1', colour: 'red' }],
    };
    const r = await svc(['apply', writeFile('bad.json', bad), '--tenant', 'cli-apply', '--json']);
    expect(r.code).toBe(2);
    const fields = JSON.parse(r.stderr).error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['processes → 0 → timeout_seconds', 'queues → 0 → colour']);

    const missingRef = await svc(['apply', writeFile('ref.json', { folders: [{ name: 'Never' }], queues: [{ name: 'q2', consumer: 'ghost' }] }), '--tenant', 'cli-apply']);
    expect(missingRef.code).toBe(2);
    expect(errorLine(missingRef)).toBe('svc: Error de validación (queues → 0 → consumer: El proceso "ghost" no existe en el fichero ni en el workspace)');

    const badSchema = await svc(['apply', writeFile('schema.json', { processes: [{ name: 'p2', input_schema: { type: 'nonsense' } }] }), '--tenant', 'cli-apply']);
    expect(badSchema.code).toBe(2);
    expect(errorLine(badSchema)).toMatch(/^svc: Error de validación \(processes → 0 → input_schema: input_schema no es un JSON Schema válido/);

    // the limits of admin-supplied schemas are core's: `svc apply` meets the same ones as the API
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`f${i}`, { type: 'string' }])) };
    const tooWide = await svc(['apply', writeFile('wide.json', { processes: [{ name: 'p3', input_schema: wide }] }), '--tenant', 'cli-apply']);
    expect(tooWide.code).toBe(2);
    expect(errorLine(tooWide)).toBe('svc: Error de validación (processes → 0 → input_schema: input_schema supera el límite de subesquemas: 501 (máximo 500))');
    const backref = { type: 'object', properties: { code: { type: 'string', pattern: '^(a)\\1$' } } };
    const badPattern = await svc(['apply', writeFile('backref.json', { processes: [{ name: 'p4', input_schema: backref }] }), '--tenant', 'cli-apply']);
    expect(badPattern.code).toBe(2);
    expect(errorLine(badPattern)).toBe(
      'svc: Error de validación (processes → 0 → input_schema → properties → code → pattern: patrón no admitido: las referencias hacia atrás (\\1, \\k<nombre>) no están admitidas)',
    );

    const dup = await svc(['apply', writeFile('dup.json', { machines: [{ name: 'm' }, { name: 'm' }] }), '--tenant', 'cli-apply']);
    expect(dup.code).toBe(2);
    expect(errorLine(dup)).toContain('machines → 1 → name');

    const newAsset = await svc(['apply', writeFile('asset.json', { assets: [{ name: 'untyped', values: { dev: 'x' } }] }), '--tenant', 'cli-apply']);
    expect(newAsset.code).toBe(2);
    expect(errorLine(newAsset)).toContain('assets → 0 → type');

    expect(await snapshot()).toEqual(before);
  });

  it('needs a JSON file that exists, an existing tenant, and an env var for each $env', async () => {
    expect((await svc(['apply', path.join(tmp, 'missing.json'), '--tenant', 'cli-apply'])).code).toBe(3);
    const yaml = await svc(['apply', writeFile('ws.yaml', 'folders: []'), '--tenant', 'cli-apply']);
    expect(yaml.code).toBe(2);
    expect(errorLine(yaml)).toMatch(/YAML workspace files are not supported/);
    const notJson = await svc(['apply', writeFile('broken.json', '{"folders": ['), '--tenant', 'cli-apply']);
    expect(notJson.code).toBe(2);
    expect((await svc(['apply', EXAMPLE, '--tenant', 'no-such-tenant'])).code).toBe(3);
    expect((await svc(['apply', EXAMPLE])).code).toBe(2);
    const env = await svc(['apply', writeFile('env.json', { assets: [{ name: 'token', type: 'text', values: { dev: { $env: 'SVC_ASSET_CLI_TEST_UNSET' } } }] }), '--tenant', 'cli-apply'], { env: { SVC_ASSET_CLI_TEST_UNSET: undefined } });
    expect(env.code).toBe(2);
    expect(errorLine(env)).toContain('la variable de entorno SVC_ASSET_CLI_TEST_UNSET no está definida');
  });

  it('reads with $env only variables named SVC_ASSET_…: any other is refused (2) before it is read, naming the place, and nothing is applied', async () => {
    const before = await snapshot();
    const doc = {
      folders: [{ name: 'Never either' }],
      assets: [
        { name: 'leak', type: 'credential', values: { production: { username: 'x', password: { $env: 'DATABASE_URL' } } } },
      ],
    };
    const r = await svc(['apply', writeFile('leak.json', doc), '--tenant', 'cli-apply']);
    expect(r.code).toBe(2);
    expect(errorLine(r)).toBe(
      'svc: Error de validación (assets → 0 → values → production → password: $env solo puede leer variables que empiezan por SVC_ASSET_ (p. ej. SVC_ASSET_ERP_PASSWORD), no DATABASE_URL)',
    );
    expect(errorLine(r)).not.toContain(baseEnv.DATABASE_URL!);
    // the prefix alone names no variable; an unset one is refused for its name, not for being unset
    for (const name of ['SVC_ASSET_', 'PGPASSWORD', 'svc_asset_lowercase']) {
      const other = await svc(['apply', writeFile('leak2.json', { assets: [{ name: 'leak2', type: 'text', values: { dev: { $env: name } } }] }), '--tenant', 'cli-apply', '--json'], { env: { [name]: 'operator-secret' } });
      expect(other.code).toBe(2);
      expect(JSON.parse(other.stderr).error.details).toEqual([{ field: 'assets → 0 → values → dev', message: expect.stringContaining(`empiezan por SVC_ASSET_ (p. ej. SVC_ASSET_ERP_PASSWORD), no ${name}`) }]);
    }
    expect(await snapshot()).toEqual(before);
  });

  it('reads the file from standard input with -', async () => {
    const r = await svc(['apply', '-', '--tenant', 'cli-apply', '--json'], { input: JSON.stringify({ folders: [{ name: 'From stdin' }] }) });
    expect(r.code).toBe(0);
    expect(json(r).resources).toEqual([expect.objectContaining({ kind: 'folder', name: 'From stdin', action: 'created' })]);
  });

  it('audits each change like the settings API (system actor, source cli, never a value), and nothing for unchanged runs or dry runs', async () => {
    const tenant = json(await svc(['tenant', 'create', '--name', 'cli-audit', '--json'])).id as string;
    const audit = () => t.sql`
      select action, actor_type, actor_id, source, resource_type, resource_id, details from audit_log
      where tenant_id = ${tenant} order by id`;

    const created = json(await svc(['apply', EXAMPLE, '--tenant', 'cli-audit', '--json']));
    const rows = await audit();
    // one row per resource (the process chain set in the second pass is part of its create)
    expect(rows).toEqual(created.resources.map((r: { kind: string; name: string; id: string }) => ({
      action: `create_${r.kind}`, actor_type: 'system', actor_id: null, source: 'cli', resource_type: r.kind, resource_id: r.id,
      details: { name: r.name },
    })));
    const keys = created.resources.filter((r: { machine_key?: string }) => r.machine_key).map((r: { machine_key: string }) => r.machine_key);
    expect(keys).toHaveLength(2);
    for (const secret of ['dev-only-password', ...keys]) expect(JSON.stringify(rows)).not.toContain(secret);

    expect(json(await svc(['apply', EXAMPLE, '--tenant', 'cli-audit', '--json'])).summary.updated).toBe(0);
    expect(await audit()).toHaveLength(rows.length);

    const doc = JSON.parse(readFileSync(EXAMPLE, 'utf8'));
    doc.processes[0].timeout_seconds = 900;
    doc.processes[0].on_success = null;
    doc.machines[1].is_active = false;
    doc.assets[2].values.dev.password = 'rotated-secret-password';
    const file = writeFile('audited.json', doc);
    expect((await svc(['apply', file, '--tenant', 'cli-audit', '--dry-run'])).code).toBe(0);
    expect(await audit()).toHaveLength(rows.length);

    const changed = json(await svc(['apply', file, '--tenant', 'cli-audit', '--json']));
    const id = (name: string) => changed.resources.find((r: { name: string }) => r.name === name).id;
    const after = (await audit()).slice(rows.length);
    expect(after.map((r) => [r.action, r.resource_id, r.details])).toEqual([
      ['update_process', id('invoice-processing'), { fields: ['timeout_seconds', 'on_success_trigger_process_id'] }],
      ['update_machine', id('robot-02'), { fields: ['is_active'] }],
      ['update_asset', id('erp-credentials'), { fields: ['values'] }],
    ]);
    expect(after.every((r) => r.actor_type === 'system' && r.source === 'cli')).toBe(true);
    expect(JSON.stringify(after)).not.toContain('rotated-secret-password');
  });

  it('refuses to touch assets without the encryption key', async () => {
    const r = await svc(['apply', EXAMPLE, '--tenant', 'cli-apply'], { env: { ASSET_ENCRYPTION_KEY: undefined } });
    expect(r.code).toBe(1);
    // without the variable the CLI falls back to the key file of `npm start`, if this checkout has one
    expect(errorLine(r)).toMatch(/^svc: .*ASSET_ENCRYPTION_KEY/);
  });
});
