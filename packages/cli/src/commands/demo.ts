import { randomBytes } from 'node:crypto';
import { CLI_ACTOR, SCOPE_NAMES, type Engine } from '@svc/core';
import { parse } from '../args';
import type { Command, CommandContext } from '../context';
import { applyWorkspace } from '../workspace/apply';

/**
 * The demo workspace `npm start` creates on first start. Created once; each later start only
 * re-issues the machine keys (the simulated agents need them, and only hashes are stored) and a
 * fresh admin access token. The API key and the admin password are shown once, at creation.
 */
export const DEMO = {
  tenant: 'demo',
  adminEmail: 'admin@demo.local',
  queue: 'invoices',
  process: 'invoice-processing',
  machines: ['robot-01', 'robot-02'],
} as const;

export const DEMO_WORKSPACE = {
  folders: [{ name: 'Finance', description: 'Accounts payable robots' }],
  processes: [
    {
      name: DEMO.process,
      folder: 'Finance',
      description: 'Reads an invoice and books it in the ERP',
      timeout_seconds: 600,
      max_retries: 2,
      auto_retry: true,
      retry_delay_seconds: 5,
      sla_deadline_minutes: 60,
      tags: ['finance'],
    },
    { name: 'archive-invoices', folder: 'Finance', description: 'Moves booked invoices to the archive', timeout_seconds: 300 },
  ],
  machines: [
    { name: DEMO.machines[0], description: 'Simulated robot', slots: 2 },
    { name: DEMO.machines[1], description: 'Simulated robot', slots: 2 },
  ],
  queues: [{ name: DEMO.queue, description: 'Invoices waiting to be booked', max_retries: 3, consumer: DEMO.process, max_consumers: 2 }],
  assets: [
    { name: 'erp-url', type: 'text', values: { dev: 'https://erp.dev.example.com', production: 'https://erp.example.com' } },
    { name: 'erp-credentials', type: 'credential', values: { dev: { username: 'robot-dev', password: 'dev-only-password' } } },
  ],
};

export interface DemoReport {
  created: boolean;
  tenant_id: string;
  tenant_name: string;
  admin_email: string;
  /** Only when the workspace was created by this call. */
  admin_password?: string;
  /** Only when created by this call (or with --new-key). */
  api_key?: string;
  access_token: string;
  queue_name: string;
  process_id: string;
  machines: Array<{ name: string; machine_id: string; machine_key: string }>;
}

export async function setUpDemo(engine: Engine, env: Record<string, string | undefined>, opts: { newKey?: boolean } = {}): Promise<DemoReport> {
  let tenant = await engine.tenants.findByName(DEMO.tenant);
  const report: Partial<DemoReport> = { created: !tenant };
  if (!tenant) {
    tenant = await engine.tenants.create({ name: DEMO.tenant, plan_features: ['api_keys', 'webhooks'], monthly_quota: 1_000_000 });
    report.admin_password = randomBytes(9).toString('base64url');
    await engine.users.create(tenant.id, { email: DEMO.adminEmail, name: 'Demo admin', password: report.admin_password, role: 'admin' });
    await applyWorkspace(engine, tenant.id, DEMO_WORKSPACE, { env });
  }
  const admin = await engine.users.resolve(DEMO.adminEmail);
  if (report.created || opts.newKey) {
    // a brand-new key is in no API process's cache: the CLI's engine tells no one
    const key = await engine.keys.create(
      { tenantId: tenant.id, userId: admin.id, source: 'cli' },
      { name: report.created ? 'demo key' : `demo key ${new Date().toISOString()}`, scopes: [...SCOPE_NAMES] },
    );
    report.api_key = key.key;
  }
  const process = await engine.catalog.findByName(tenant.id, 'process', DEMO.process);
  const machines = [];
  for (const name of DEMO.machines) {
    const machine = await engine.catalog.findByName(tenant.id, 'machine', name);
    if (!machine) continue;
    const rotated = await engine.catalog.machines.rotateKey(CLI_ACTOR, tenant.id, machine.id);
    machines.push({ name, machine_id: machine.id, machine_key: rotated.machineKey });
  }
  const token = await engine.users.issueToken(admin.id, 12 * 3600);
  return {
    ...report,
    created: report.created!,
    tenant_id: tenant.id,
    tenant_name: tenant.name,
    admin_email: admin.email,
    access_token: token.token,
    queue_name: DEMO.queue,
    process_id: process!.id,
    machines,
  };
}

export const DEMO_HELP = `Usage:
  svc demo [--new-key] [--json]

  Creates the demo workspace on first use (tenant "demo", admin ${DEMO.adminEmail}, an API key
  with every scope, processes, two machines, the "${DEMO.queue}" queue, assets) and prints what
  is needed to try it. Later runs re-issue the machine keys and an admin access token.
  --new-key   also issue a new demo API key (the first one was shown only once)`;

export const demoCommand: Command = {
  summary: 'create the demo workspace (npm start runs this)',
  help: DEMO_HELP,
  async run(args: string[], ctx: CommandContext) {
    const p = parse(args, { 'new-key': { type: 'boolean' } }, DEMO_HELP);
    const o = ctx.output(!!p.values.json);
    if (p.values.help) return void o.text(DEMO_HELP);
    const r = await setUpDemo(await ctx.engine(), ctx.io.env, { newKey: !!p.values['new-key'] });
    o.result(r);
    o.text([
      `Demo workspace "${r.tenant_name}" ${r.created ? 'created' : 'already exists'}.`,
      `Admin: ${r.admin_email}${r.admin_password ? ` / ${r.admin_password} (shown once)` : ''}`,
      r.api_key ? `API key (shown once): ${r.api_key}` : 'API key: shown when the workspace was created (svc demo --new-key issues another)',
      `Admin access token (12 h): ${r.access_token}`,
      ...r.machines.map((m) => `Machine ${m.name}: ${m.machine_key}`),
    ]);
  },
};

export const MIGRATE_HELP = `Usage:
  svc migrate [--json]

  Creates the database when missing and applies pending migrations (every command does this first).`;

export const migrateCommand: Command = {
  summary: 'create the database if needed and apply migrations',
  help: MIGRATE_HELP,
  async run(args: string[], ctx: CommandContext) {
    const p = parse(args, {}, MIGRATE_HELP);
    const o = ctx.output(!!p.values.json);
    if (p.values.help) return void o.text(MIGRATE_HELP);
    const version = await (await ctx.engine()).schemaVersion();
    o.result({ schema_version: version });
    o.text(`Database is at schema version ${version}.`);
  },
};
