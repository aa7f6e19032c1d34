import {
  createUser, deactivateUser, listUsersOfTenant, resolveTenant, resolveUser, setPassword, toUserResponse, USER_ROLES,
  type Sql, type UserResponseBody, type UserRole,
} from '@svc/core';
import { optionalString, parse, positional, required, type Parsed } from '../args';
import type { Command, CommandContext } from '../context';
import { UsageError } from '../errors';
import { record, table } from '../output';

export const USER_HELP = `Usage:
  svc user create --tenant <id|name> --email EMAIL --role admin|member (--password PASSWORD | --password-stdin) [--name NAME]
  svc user list --tenant <id|name>
  svc user set-password <id|email> (--password PASSWORD | --password-stdin)
  svc user deactivate <id|email>

  Passwords: at least 8 characters, stored as a scrypt hash. --password-stdin reads the password
  from standard input (keeps it out of shell history and the process list).
  Emails are unique across all tenants, in any letter case.
  --json          print JSON for scripts`;

const PASSWORD_OPTIONS = {
  password: { type: 'string' },
  'password-stdin': { type: 'boolean' },
} as const;

async function password(p: Parsed, ctx: CommandContext): Promise<string> {
  const given = optionalString(p, 'password');
  if (given !== undefined && p.values['password-stdin']) throw new UsageError('give --password or --password-stdin, not both', USER_HELP);
  if (given !== undefined) return given;
  if (p.values['password-stdin']) return (await ctx.io.readStdin()).replace(/\r?\n$/, '');
  throw new UsageError('--password or --password-stdin is required', USER_HELP);
}

export interface UserCreateArgs {
  tenant: string;
  email: string;
  password: string;
  role: UserRole;
  name?: string | null;
}

// The command logic, importable: plain data in, response bodies out.

export async function userCreate(sql: Sql, a: UserCreateArgs): Promise<UserResponseBody & { tenant_name: string }> {
  const tenant = await resolveTenant(sql, a.tenant);
  const row = await createUser(sql, tenant.id, { email: a.email, password: a.password, role: a.role, name: a.name ?? null });
  return { ...toUserResponse(row), tenant_name: tenant.name };
}

export async function userList(sql: Sql, tenantRef: string): Promise<UserResponseBody[]> {
  const tenant = await resolveTenant(sql, tenantRef);
  return (await listUsersOfTenant(sql, tenant.id)).map(toUserResponse);
}

export async function userSetPassword(sql: Sql, ref: string, newPassword: string): Promise<UserResponseBody> {
  const user = await resolveUser(sql, ref);
  return toUserResponse(await setPassword(sql, user.id, newPassword));
}

export async function userDeactivate(sql: Sql, ref: string): Promise<UserResponseBody> {
  const user = await resolveUser(sql, ref);
  return toUserResponse(await deactivateUser(sql, user.id));
}

async function runUser(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'create': {
      const p = parse(rest, { tenant: { type: 'string' }, email: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' }, ...PASSWORD_OPTIONS }, USER_HELP);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const a: UserCreateArgs = {
        tenant: required(p, 'tenant', USER_HELP),
        email: required(p, 'email', USER_HELP),
        role: required(p, 'role', USER_HELP) as UserRole,
        password: await password(p, ctx),
        name: optionalString(p, 'name') ?? null,
      };
      if (!(USER_ROLES as readonly string[]).includes(a.role)) throw new UsageError(`--role must be one of ${USER_ROLES.join(', ')}`, USER_HELP);
      const o = ctx.output(!!p.values.json);
      const u = await userCreate(await ctx.sql(), a);
      o.result(u);
      o.text(record(`Created ${u.role} ${u.email} in tenant ${u.tenant_name}`, { id: u.id, name: u.name, tenant_id: u.tenant_id }));
      return;
    }
    case 'list': {
      const p = parse(rest, { tenant: { type: 'string' } }, USER_HELP);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const tenant = required(p, 'tenant', USER_HELP);
      const o = ctx.output(!!p.values.json);
      const users = await userList(await ctx.sql(), tenant);
      o.result(users);
      o.text(users.length
        ? table(['id', 'email', 'name', 'role', 'active'], users.map((u) => [u.id, u.email, u.name, u.role, u.is_active ? 'yes' : 'no']))
        : `No users in ${tenant} yet: svc user create --tenant ${tenant} --email … --role admin --password …`);
      return;
    }
    case 'set-password': {
      const p = parse(rest, PASSWORD_OPTIONS, USER_HELP, 1);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const ref = positional(p, 0, 'user id or email', USER_HELP);
      const pw = await password(p, ctx);
      const o = ctx.output(!!p.values.json);
      const u = await userSetPassword(await ctx.sql(), ref, pw);
      o.result(u);
      o.text(`Password of ${u.email} changed`);
      return;
    }
    case 'deactivate': {
      const p = parse(rest, {}, USER_HELP, 1);
      if (p.values.help) return void ctx.output(false).text(USER_HELP);
      const ref = positional(p, 0, 'user id or email', USER_HELP);
      const o = ctx.output(!!p.values.json);
      const u = await userDeactivate(await ctx.sql(), ref);
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
  fields: { email: '--email', password: '--password', role: '--role', name: '--name' },
  run: runUser,
};
