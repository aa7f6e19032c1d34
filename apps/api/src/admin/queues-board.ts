import type { Middleware } from 'koa';
import { Queue } from 'bullmq';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import { bearerToken, machineQueueName, queueDisplayName, requireAdminRole } from '@svc/core';
import type { ApiDeps } from '../deps';
import type { AppState } from '../http/state';

export const BOARD_PATH = '/admin/queues';
const COOKIE = 'svc_board_token';
/** How long a tenant's board keeps its list of machine queues before reading it again. */
const REFRESH_MS = 10_000;

interface TenantBoard {
  middleware: Middleware;
  replace(queues: BullMQAdapter[]): void;
  refreshedAt: number;
}

/**
 * Bull Board at /admin/queues for workspace admins (docs/decisions/dispatch.md "Operators' view"). The admin
 * access token comes as `Authorization: Bearer …`, or once as `?token=…` (kept in an HttpOnly
 * cookie scoped to this path, then redirected without it) so a browser can open the board.
 *
 * Each workspace sees its own machines' queues ("Machine <name>"), read-only: Postgres is the
 * system of record and the reconciler would undo a manual change anyway. The dispatcher's own
 * queue holds every workspace's nudges, so it is not shown to a workspace admin.
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
      options: { uiConfig: { boardTitle: 'svc · queues', hideDocsLink: true } },
    });
    board = { middleware: server.registerPlugin() as unknown as Middleware, replace: api.replaceQueues, refreshedAt: Date.now() };
    boards.set(tenantId, board);
    return board;
  }

  async function adminTenant(token: string | undefined): Promise<string> {
    const user = await deps.engine.auth.accessToken(token);
    requireAdminRole(user);
    return user.tenantId;
  }

  return async (ctx, next) => {
    if (ctx.path !== BOARD_PATH && !ctx.path.startsWith(`${BOARD_PATH}/`)) return next();
    const bearer = bearerToken(ctx.get('Authorization'));
    const fromQuery = typeof ctx.query.token === 'string' ? ctx.query.token : undefined;
    const token = bearer ?? fromQuery ?? ctx.cookies.get(COOKIE);
    const tenantId = await adminTenant(token);
    if (fromQuery && !bearer) {
      ctx.cookies.set(COOKIE, fromQuery, { httpOnly: true, sameSite: 'strict', path: BOARD_PATH, overwrite: true });
      ctx.redirect(BOARD_PATH);
      return;
    }
    const board = await boardFor(tenantId);
    await board.middleware(ctx, next);
  };
}
