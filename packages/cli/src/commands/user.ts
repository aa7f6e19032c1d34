import type { Engine } from '@svc/core';
import { USER_ROLES, type UserResponseBody, type UserRole } from '@svc/core/schemas';
import { optionalString, parse, positional, required, type Parsed } from '../args';
import type { Command, CommandContext } from '../context';
import { CliError, EXIT, UsageError } from '../errors';
import { record, table } from '../output';

export const USER_HELP = `Usage:
  svc user create --tenant <id|name> --email EMAIL --role admin|member [--password-stdin] [--name NAME]
  svc user list --tenant <id|name>
  svc user set-password <id|email> [--password-stdin]
  svc user deactivate <id|email>

  Passwords: at least 8 characters, stored as a scrypt hash. They are asked for on the terminal
  (twice, not echoed), or read from standard input with --password-stdin (for scripts:
  printf '%s' "$PW" | svc user create … --password-stdin). There is no --password flag: a
  password on the command line is seen in the process list and the shell history.
  Emails are unique across all tenants, in any letter case.
  --json          print JSON for scripts`;

const PASSWORD_OPTIONS = {
  'password-stdin': { type: 'boolean' },
} as const;

/**
 * `--password P` (or `--password=P`) is answered with what to do instead, before anything is
 * parsed, rather than node's "unknown option": operators and scripts of older versions used it.
 */
function refusePasswordFlag(args: string[]): void {
  const at = args.indexOf('--');
  if ((at < 0 ? args : args.slice(0, at)).some((a) => a === '--password' || a.startsWith('--password='))) {
    throw new UsageError(
      '--password is not accepted (a password on the command line is seen in the process list and the shell history): leave it out to be asked for it on the terminal, or pipe it with --password-stdin',
      USER_HELP,
    );
  }
}

async function password(p: Parsed, ctx: CommandContext): Promise<string> {
  if (p.values['password-stdin']) return (await ctx.io.readStdin()).replace(/\r?\n$/, '');
  if (!ctx.io.readSecret) throw new UsageError('standard input is not a terminal to ask for the password on: pipe it with --password-stdin', USER_HELP);
  const first = await ctx.io.readSecret('Password: ');
  const again = await ctx.io.readSecret('Password again: ');
  if (first !== again) throw new CliError('the two passwords differ; nothing was changed', EXIT.usage, 'VALIDATION_ERROR');
  return first;
}

export interface UserCreateArgs {
  tenant: string;
  email: string;
  password: string;
  role: UserRole;
  name?: string | null;
}

// The command logic, importable: plain data in, response bodies out.

export async function userCreate(engine: Engine, a: UserCreateArgs): Promise<UserResponseBody & { tenant_name: string }> {
  const tenant = await engine.tenants.resolve(a.tenant);
  const user = await engine.users.create(tenant.id, { email: a.email, password: a.password, role: a.role, name: a.name ?? null });
  return { ...user, tenant_name: tenant.name };
}

export async function userList(engine: Engine, tenantRef: string): Promise<UserResponseBody[]> {
  const tenant = await engine.tenants.resolve(tenantRef);
  return engine.users.listOfTenant(tenant.id);
}

export async function userSetPassword(engine: Engine, ref: string, newPassword: string): Promise<UserResponseBody> {
  const user = await engine.users.resolve(ref);
  return engine.users.setPassword(user.id, newPassword);
}

export async function userDeactivate(engine: Engine, ref: string): Promise<UserResponseBody> {
  const user = await engine.users.resolve(ref);
  return engine.users.deactivate(user.id);
}

async function runUser(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'create': {
      refusePasswordFlag(rest);
      const p = parse(rest, { tenant: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' }, ...PASSWORD_OPTIONS }, USER_HELP);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const tenant = required(p, 'tenant', USER_HELP);
      const email = required(p, 'email', USER_HELP);
      const role = required(p, 'role', USER_HELP) as UserRole;
      // before the password is asked for (and the tenant looked up): nobody types one for a command that cannot work
      if (!(USER_ROLES as readonly string[]).includes(role)) throw new UsageError(`--role must be one of ${USER_ROLES.join(', ')}`, USER_HELP);
      const engine = await ctx.engine();
      const { id: tenantId } = await engine.tenants.resolve(tenant);
      const a: UserCreateArgs = { tenant: tenantId, email, role, password: await password(p, ctx), name: optionalString(p, 'name') ?? null };
      const o = ctx.output(!!p.values.json);
      const u = await userCreate(engine, a);
      o.result(u);
      o.text(record(`Created ${u.role} ${u.email} in tenant ${u.tenant_name}`, { id: u.id, name: u.name, tenant_id: u.tenant_id }));
      return;
    }
    case 'list': {
      const p = parse(rest, { tenant: { type: 'string' } }, USER_HELP);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const tenant = required(p, 'tenant', USER_HELP);
      const o = ctx.output(!!p.values.json);
      const users = await userList(await ctx.engine(), tenant);
      o.result(users);
      o.text(users.length
        ? table(['id', 'email', 'name', 'role', 'active'], users.map((u) => [u.id, u.email, u.name, u.role, u.is_active ? 'yes' : 'no']))
        : `No users in ${tenant} yet: svc user create --tenant ${tenant} --email … --role admin`);
      return;
    }
    case 'set-password': {
      refusePasswordFlag(rest);
      const p = parse(rest, PASSWORD_OPTIONS, USER_HELP, 1);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const ref = positional(p, 0, 'user id or email', USER_HELP);
      const engine = await ctx.engine();
      // an unknown user is said before a password is typed for it
      const { id } = await engine.users.resolve(ref);
      const pw = await password(p, ctx);
      const o = ctx.output(!!p.values.json);
      const u = await userSetPassword(engine, id, pw);
      o.result(u);
      o.text(`Password of ${u.email} changed`);
      return;
    }
    case 'deactivate': {
      const p = parse(rest, {}, USER_HELP, 1);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const ref = positional(p, 0, 'user id or email', USER_HELP);
      const o = ctx.output(!!p.values.json);
      const u = await userDeactivate(await ctx.engine(), ref);
      o.result(u);
      o.text(`Deactivated ${u.email}; its access tokens are revoked`);
      return;
    }
    default:
      throw new UsageError(sub ? `unknown user command "${sub}"` : 'missing user command', USER_HELP);
  }
}

export const userCommand: Command = {
  summary: 'create users (admin or member), list them, change a password, deactivate',
  help: USER_HELP,
  // the password has no flag: its problems are named `password`
  fields: { email: '--email', role: '--role', name: '--name' },
  run: runUser,
};
