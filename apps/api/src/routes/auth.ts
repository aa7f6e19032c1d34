import { es, UnauthorizedError, ValidationError } from '@svc/core';
import { LoginBody, LoginResponse, LogoutResponse, MeResponse, PasswordChangeBody, PasswordChangeResponse } from '@svc/core/schemas';
import { createHashGate } from '../auth/hash-gate';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';
import { ok } from '../http/respond';

/**
 * User sessions: log in with email and password for a Bearer access token (the credential of the
 * management endpoints), see who a token belongs to, and revoke it.
 */
export function authRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const { engine, config, authThrottle } = rc.deps;
  const hashing = createHashGate(config.passwordHashConcurrency);

  // explicit type arguments: inferring them from a schema imported from core's declarations
  // sends the compiler into TS2589 (instantiation too deep)
  addRoute<undefined, undefined, typeof LoginBody>(
    router,
    rc,
    {
      method: 'post',
      path: '/auth/login',
      operationId: 'logIn',
      summary: 'Log in with email and password',
      description:
        'Returns an access token for `Authorization: Bearer`. Unknown email, wrong password and ' +
        `inactive user all answer 401 \`${es.errors.UNAUTHORIZED}\`, and each is audited as \`login_failed\` in the account's ` +
        'workspace. Rate limited per source IP; after 5 failures in a row for one account from one address, each further ' +
        'failure doubles a wait (429 with Retry-After, up to 15 minutes) that a success resets; after 20 failures in an hour ' +
        'for one account from anywhere, addresses it has not signed in from lately wait too (at most a minute at a time). ' +
        'A user created with a one-time password signs in normally and gets `user.must_change_password: true`: until ' +
        '`POST /auth/password` changes it, every route but that one, `GET /auth/me` and `POST /auth/logout` answers 403.',
      tags: ['auth'],
      auth: { kind: 'none' },
      body: LoginBody,
      response: LoginResponse,
      errors: [401, 422],
    },
    async (ctx, input) => {
      const body = input.body();
      const ip = ctx.state.clientIp;
      const session = await authThrottle.signIn(body.email, ip, () =>
        hashing.run(() => engine.auth.signIn(body, config.accessTokenTtlSeconds, { requestId: ctx.state.requestId, ip, logger: ctx.state.log })),
      );
      ok(ctx, session);
    },
  );

  addRoute(
    router,
    rc,
    {
      method: 'post',
      path: '/auth/logout',
      operationId: 'logOut',
      summary: 'Revoke the access token of this request',
      tags: ['auth'],
      auth: { kind: 'user', admin: false, pendingPassword: true },
      response: LogoutResponse,
    },
    async (ctx) => {
      await engine.auth.signOut(ctx.state.user!, { requestId: ctx.state.requestId, ip: ctx.state.clientIp });
      ok(ctx, { revoked: true });
    },
  );

  addRoute(
    router,
    rc,
    {
      method: 'get',
      path: '/auth/me',
      operationId: 'getSession',
      summary: 'The user and access token of this request',
      tags: ['auth'],
      auth: { kind: 'user', admin: false, pendingPassword: true },
      response: MeResponse,
    },
    async (ctx) => {
      ok(ctx, await engine.auth.session(ctx.state.user!.tokenId));
    },
  );

  addRoute<undefined, undefined, typeof PasswordChangeBody>(
    router,
    rc,
    {
      method: 'post',
      path: '/auth/password',
      operationId: 'updateOwnPassword',
      summary: 'Change your own password',
      description:
        'Any signed-in user, including one who must still replace a one-time password (the only change such a user can make). ' +
        '`current_password` wrong → 422 on that field; `new_password` 8 to 1,024 characters, not a common password and different from the current one, ' +
        'else 422. A wrong current password counts as a failed sign-in of the account from this address (the sign-in ' +
        'throttle: 429 once blocked). Clears `must_change_password`; the token of this request stays valid and every other ' +
        'token of the user is revoked. Audited as `change_password`.',
      tags: ['auth'],
      auth: { kind: 'user', admin: false, pendingPassword: true },
      body: PasswordChangeBody,
      response: PasswordChangeResponse,
      errors: [422, 429],
    },
    async (ctx, input) => {
      const body = input.body();
      const user = ctx.state.user!;
      const ip = ctx.state.clientIp;
      // a wrong current password is a failed sign-in of the account: a stolen token cannot guess it
      // faster than the sign-in form could (the same budgets and blocks), and still gets its 422
      try {
        await authThrottle.signIn(user.email, ip, () => hashing.run(async () => {
          try {
            return await engine.users.changeOwnPassword(user, body, { requestId: ctx.state.requestId, ip });
          } catch (err) {
            if (isWrongCurrentPassword(err)) throw new WrongCurrentPassword(err);
            throw err;
          }
        }));
      } catch (err) {
        if (err instanceof WrongCurrentPassword) throw err.refusal;
        throw err;
      }
      ok(ctx, { changed: true as const });
    },
  );

  return router;
}

/** The throttle counts a failure when a check throws UnauthorizedError; this carries the route's own 422 through it. */
class WrongCurrentPassword extends UnauthorizedError {
  constructor(readonly refusal: ValidationError) {
    super();
  }
}

function isWrongCurrentPassword(err: unknown): err is ValidationError {
  return err instanceof ValidationError && err.issues.some((i) => i.loc[0] === 'body' && i.loc[1] === 'current_password');
}
