import type { Engine } from '@svc/core';
import type { AccessTokenResponseBody, IssuedAccessToken, UserResponseBody } from '@svc/core/schemas';
import { optionalInt, parse, positional, required } from '../args';
import type { Command, CommandContext } from '../context';
import { CliError, EXIT, UsageError } from '../errors';
import { record } from '../output';

export const DEFAULT_TOKEN_TTL_SECONDS = 3600;

export const TOKEN_HELP = `Usage:
  svc token issue --email EMAIL [--ttl ${DEFAULT_TOKEN_TTL_SECONDS}]
  svc token revoke <token | token-prefix | token-id>

  issue   prints a new access token for the user, once (send it as Authorization: Bearer …);
          --ttl is its lifetime in seconds (60 .. 7776000)
  revoke  revokes a token, named by its id, its whole value or its 12-character prefix
  --json  print JSON for scripts`;

// The command logic, importable: plain data in, response bodies out.

export async function tokenIssue(engine: Engine, email: string, ttlSeconds = DEFAULT_TOKEN_TTL_SECONDS): Promise<IssuedAccessToken & { user: UserResponseBody }> {
  const user = await engine.users.resolve(email);
  const issued = await engine.users.issueToken(user.id, ttlSeconds);
  return { ...issued, user };
}

export async function tokenRevoke(engine: Engine, ref: string): Promise<AccessTokenResponseBody & { already_revoked: boolean }> {
  const found = await engine.users.findTokens(ref);
  if (found.length === 0) throw new CliError(`no access token matches "${ref}"`, EXIT.notFound, 'NOT_FOUND');
  if (found.length > 1) {
    throw new CliError(`"${ref}" matches ${found.length} access tokens: name one by id (${found.map((t) => t.id).join(', ')})`, EXIT.conflict, 'CONFLICT');
  }
  const revokedNow = await engine.users.revokeToken(found[0]!.id);
  const [after] = await engine.users.findTokens(found[0]!.id);
  return { ...after!, already_revoked: !revokedNow };
}

async function runToken(args: string[], ctx: CommandContext): Promise<void> {
  const [sub, ...rest] = args;
  switch (sub) {
    case 'issue': {
      const p = parse(rest, { email: { type: 'string' }, ttl: { type: 'string' } }, TOKEN_HELP);
      if (p.values.help) return void ctx.output(false).text(TOKEN_HELP);
      const email = required(p, 'email', TOKEN_HELP);
      const ttl = optionalInt(p, 'ttl') ?? DEFAULT_TOKEN_TTL_SECONDS;
      if (typeof ttl !== 'number') throw new UsageError('--ttl must be a whole number of seconds', TOKEN_HELP);
      const o = ctx.output(!!p.values.json);
      const t = await tokenIssue(await ctx.engine(), email, ttl);
      o.result(t);
      o.text([
        `Access token for ${t.user.email} (${t.user.role}), valid until ${t.expires_at}:`,
        '',
        `  ${t.token}`,
        '',
        'It is shown only this once. Use it as: Authorization: Bearer <token>',
        `Revoke it with: svc token revoke ${t.id}`,
      ]);
      return;
    }
    case 'revoke': {
      const p = parse(rest, {}, TOKEN_HELP, 1);
      if (p.values.help) return void ctx.output(false).text(TOKEN_HELP);
      const ref = positional(p, 0, 'token, token prefix or token id', TOKEN_HELP);
      const o = ctx.output(!!p.values.json);
      const t = await tokenRevoke(await ctx.engine(), ref);
      o.result(t);
      o.text(record(t.already_revoked ? `Access token ${t.prefix}… was already revoked` : `Revoked access token ${t.prefix}…`, {
        id: t.id, user_id: t.user_id, revoked_at: t.revoked_at,
      }));
      return;
    }
    default:
      throw new UsageError(sub ? `unknown token command "${sub}"` : 'missing token command', TOKEN_HELP);
  }
}

export const tokenCommand: Command = {
  summary: 'issue a user access token (shown once), revoke one',
  help: TOKEN_HELP,
  fields: { ttl: '--ttl' },
  run: runToken,
};
