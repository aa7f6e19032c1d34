import { createHash, randomBytes } from 'node:crypto';
import type { Middleware, ParameterizedContext } from 'koa';
import { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { bearerToken, es, machineQueueName, queueDisplayName, requireAdminRole, UnauthorizedError } from '@svc/core';
import { authenticateUser } from '../auth/bearer';
import type { ApiDeps } from '../deps';
import type { AppState } from '../http/state';
import { requestOverTls } from '../http/tls';
import { ok } from '../http/respond';

export const BOARD_PATH = '/admin/queues';
/** Where the console exchanges its bearer token for the board's cookie. */
export const BOARD_SESSION_PATH = `${BOARD_PATH}/session`;
export const BOARD_COOKIE = 'svc_board_session';
/**
 * A board session's life: long enough to watch a queue for a while, short enough that a cookie
 * left in a browser is soon worthless. Every request re-checks the access token behind it anyway.
 */
export const BOARD_SESSION_SECONDS = 30 * 60;
/** How long a tenant's board keeps its list of machine queues before reading it again. */
const REFRESH_MS = 10_000;

interface TenantBoard {
  middleware: Middleware;
  replace(queues: BullMQAdapter[]): void;
  refreshedAt: number;
}

/**
 * Bull Board at /admin/queues for workspace admins (docs/decisions/dispatch.md "Operators' view",
 * docs/decisions/security-headers.md). A browser gets in through an exchange: the console sends
 * `POST /admin/queues/session` with its `Authorization: Bearer <admin access token>` and gets an
 * HttpOnly, SameSite=Strict cookie scoped to this path holding a random session id; Redis maps
 * the id's hash to the access token's id and workspace for BOARD_SESSION_SECONDS. The token itself
 * never travels in a URL (where logs, history and Referer keep it) and is not stored in Redis.
 * Each request re-checks that token (revoked, expired, user deactivated, no longer admin → refused).
 * Scripts may still send the bearer header on every request; `?token=` is not read at all.
 *
 * Each workspace sees its own machines' queues ("Machine <name>"), read-only: Postgres is the
 * system of record and the reconciler would undo a manual change anyway. The dispatcher's own
 * queue holds every workspace's nudges, so it is not shown to a workspace admin. Redis details
 * (version, memory, clients) are hidden: they describe the shared server, not the workspace.
 */
export function queuesBoard(deps: ApiDeps): Middleware<AppState> {
  const boards = new Map<string, TenantBoard>();
  const queues = new Map<string, Queue>();

  function queueOf(machineId: string): Queue {
    let q = queues.get(machineId);
    if (!q) {
      q = new Queue(machineQueueName(machineId), { connection: deps.redis, prefix: deps.keys.bull });
      q.on('error', (err) => deps.logger.warn('board queue error', { err: err.message }));
      queues.set(machineId, q);
    }
    return q;
  }

  async function adaptersFor(tenantId: string): Promise<BullMQAdapter[]> {
    const machines = await deps.engine.catalog.machines.names(tenantId);
    return machines.map((m) => new BullMQAdapter(queueOf(m.id), {
      readOnlyMode: true,
      displayName: queueDisplayName(machineQueueName(m.id), m.name) + (m.is_active ? '' : ' (inactive)'),
      description: `Jobs of machine ${m.name}; Postgres holds their state, this is the delivery to its agent.`,
    }));
  }

  async function boardFor(tenantId: string): Promise<TenantBoard> {
    let board = boards.get(tenantId);
    if (board && Date.now() - board.refreshedAt < REFRESH_MS) return board;
    const adapters = await adaptersFor(tenantId);
    if (board) {
      board.replace(adapters);
      board.refreshedAt = Date.now();
      return board;
    }
    const server = new KoaAdapter();
    server.setBasePath(BOARD_PATH);
    const api = createBullBoard({
      queues: adapters,
      // @bull-board/koa 9.10.1 carries its own copy of @bull-board/api 9.10.1: the same shape, other declarations
      serverAdapter: server as never,
      options: { uiConfig: { boardTitle: 'svc · queues', hideDocsLink: true, hideRedisDetails: true } },
    });
    board = { middleware: server.registerPlugin() as unknown as Middleware, replace: api.replaceQueues, refreshedAt: Date.now() };
    boards.set(tenantId, board);
    return board;
  }

  const sessionKey = (id: string) => `${deps.keys.boardSessions}:${createHash('sha256').update(id).digest('hex')}`;

  /** The exchange: a bearer admin's token id and workspace under a new random id, and the cookie. */
  async function openSession(ctx: ParameterizedContext<AppState>): Promise<void> {
    await authenticateUser(deps)(ctx);
    const user = ctx.state.user!;
    requireAdminRole(user);
    const id = randomBytes(32).toString('base64url');
    const session: BoardSession = { tokenId: user.tokenId, tenantId: user.tenantId };
    await deps.redis.set(sessionKey(id), JSON.stringify(session), 'EX', BOARD_SESSION_SECONDS);
    // written by hand: Koa's cookies refuse `Secure` unless Koa itself trusts the proxy (app.proxy
    // is off here; TRUST_PROXY_COUNT decides, as for the client IP)
    const secure = requestOverTls(ctx, deps.config.trustedProxyCount) ? '; Secure' : '';
    ctx.append('Set-Cookie', `${BOARD_COOKIE}=${id}; Path=${BOARD_PATH}; Max-Age=${BOARD_SESSION_SECONDS}; HttpOnly; SameSite=Strict${secure}`);
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { url: BOARD_PATH, expires_in: BOARD_SESSION_SECONDS });
  }

  /** The workspace of a live board session, re-checking its access token now; else 401 (403 when no longer admin). */
  async function sessionTenant(id: string | undefined): Promise<string> {
    if (!id || id.length > 64) throw new UnauthorizedError();
    const raw = await deps.redis.get(sessionKey(id));
    if (!raw) throw new UnauthorizedError();
    const session = JSON.parse(raw) as BoardSession;
    const [live] = await deps.engine.auth.liveTokens([session.tokenId]);
    if (!live) {
      await deps.redis.del(sessionKey(id)); // its token is gone for good: so is the session
      throw new UnauthorizedError();
    }
    requireAdminRole(live);
    return session.tenantId;
  }

  return async (ctx, next) => {
    if (ctx.path !== BOARD_PATH && !ctx.path.startsWith(`${BOARD_PATH}/`)) return next();
    if (ctx.path === BOARD_SESSION_PATH) {
      if (ctx.method !== 'POST') {
        ctx.set('Allow', 'POST');
        ctx.status = 405;
        return;
      }
      return openSession(ctx);
    }
    let tenantId: string;
    if (bearerToken(ctx.get('Authorization'))) {
      await authenticateUser(deps)(ctx);
      requireAdminRole(ctx.state.user);
      tenantId = ctx.state.user!.tenantId;
    } else {
      try {
        tenantId = await sessionTenant(ctx.cookies.get(BOARD_COOKIE));
      } catch (err) {
        if (err instanceof UnauthorizedError && wantsPage(ctx)) return openFromConsolePage(ctx);
        throw err;
      }
    }
    const board = await boardFor(tenantId);
    await board.middleware(ctx, next);
    if (typeof ctx.body === 'string' && ctx.response.is('html')) ctx.body = withoutThirdParties(ctx.body);
  };
}

/**
 * Bull Board's page links Google Fonts' stylesheet: an admin's browser would tell a third party
 * each time the board is opened, and the board's CSP ('self' only) refuses it anyway, with a
 * violation report. Without it the page uses the system's fonts.
 */
export function withoutThirdParties(html: string): string {
  return html.replace(/<link\b[^>]*\bhref="https:\/\/fonts\.googleapis\.com\/[^"]*"[^>]*>\s*/g, '');
}

interface BoardSession {
  tokenId: string;
  tenantId: string;
}

/** A browser navigating to the board (not its own API calls, which want the JSON envelope). */
function wantsPage(ctx: ParameterizedContext<AppState>): boolean {
  return (ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.get('Accept').includes('text/html');
}

export const OPEN_FROM_CONSOLE_HTML = es.pages.boardNeedsSession(BOARD_SESSION_SECONDS / 60);

/** 401 as a tiny page without scripts: the way in is the console's button. */
function openFromConsolePage(ctx: ParameterizedContext<AppState>): void {
  ctx.status = 401;
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'html';
  ctx.body = OPEN_FROM_CONSOLE_HTML;
}
