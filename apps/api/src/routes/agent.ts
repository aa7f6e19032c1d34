import { es, HttpError } from '@svc/core';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';

/**
 * `GET /api/v1/agent/connect`: where robots open their WebSocket (docs/agent-protocol.md). The
 * upgrade itself is served by the agent hub on the server's `upgrade` event (agent/hub.ts); this
 * declaration documents it in the OpenAPI document and answers a request without an upgrade.
 */
export function agentRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addRoute(router, rc, {
    method: 'get',
    path: '/agent/connect',
    operationId: 'connectMachine',
    summary: 'Connect a robot (WebSocket)',
    description:
      'A robot opens one WebSocket here with `Authorization: Bearer <machine key>` (`svc_mk_…`) and speaks the machine ' +
      'protocol: JSON messages, requests answered by `reply`, jobs and stops pushed by the server (docs/agent-protocol.md). ' +
      'A missing, unknown or deactivated key answers 401 before the upgrade; an address over its budget of failed ' +
      'credentials 429. A request without `Upgrade: websocket` answers 426.',
    tags: ['machine protocol'],
    auth: { kind: 'none' },
    headers: [{ name: 'Authorization', description: '`Bearer svc_mk_…`: the machine key', required: true }],
    successStatus: 101,
    errors: [401, 426],
  }, () => {
    throw new HttpError(426, es.http.webSocketOnly, { Upgrade: 'websocket' });
  });
  return router;
}
