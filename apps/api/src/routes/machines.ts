import { Type } from '@sinclair/typebox';
import { MACHINE_STATUSES, MachineResponse, PageQuery, type MachineStatus } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../http/router';
import { addRoute, type RouteContext } from '../http/route';
import { paged } from '../http/respond';

/**
 * `status` is one of online/offline/busy (422 otherwise). A plain string enum
 * (rather than a union of literals) gives one clear validation message and a readable OpenAPI enum.
 */
export const PublicMachineListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(
      Type.Unsafe<MachineStatus>({ type: 'string', enum: [...MACHINE_STATUSES], description: 'Only machines in this status' }),
    ),
  },
  { additionalProperties: false },
);

/** Named, so the OpenAPI document has one `MachineResponse` component (docs/decisions/machine-record.md). */
const MachineResponseSchema = Type.Object(MachineResponse.properties, { title: 'MachineResponse' });

export function machineRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addRoute(
    router,
    rc,
    {
      method: 'get',
      path: '/machines/list',
      operationId: 'listMachines',
      summary: 'List machines',
      description:
        'Active machines of the key\'s workspace (the machine record of docs/decisions/machine-record.md), ' +
        'ordered by name (then id), paged like every list (page 1..500, limit 1..100, default 20).',
      tags: ['machines'],
      auth: { kind: 'api_key', scope: 'machines:read' },
      query: PublicMachineListQuery,
      response: MachineResponseSchema,
      paged: true,
    },
    async (ctx, input) => {
      const q = input.query();
      const page = await rc.deps.engine.catalog.machines.list(ctx.state.apiKey!.tenantId, {
        page: q.page,
        limit: q.limit,
        status: q.status,
        is_active: true,
      });
      paged(ctx, page.data, page.meta);
    },
  );
  return router;
}
