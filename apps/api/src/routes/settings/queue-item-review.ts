import type { ReviewActor } from '@svc/core';
import {
  ApproveItemBody, QueueItemPathParams, QueueItemResponse, QueuePathParams, RedriveBody, RedriveResponse, RejectItemBody,
} from '@svc/core/schemas';
import type { AppRouter } from '../../http/router';
import { routeGroup, type RouteContext } from '../../http/route';
import { ok } from '../../http/respond';
import { ADMIN, type Ctx } from './crud';

const TAGS = ['settings: queue items'];

function actorOf(ctx: Ctx): ReviewActor {
  const user = ctx.state.user!;
  return { tenantId: user.tenantId, userId: user.userId, reviewer: user.email, requestId: ctx.state.requestId, ip: ctx.state.clientIp };
}

/**
 * Human review and dead-letter re-drive of queue items, for workspace admins:
 *   POST /settings/queues/{queue_id}/items/{item_id}/approve   pending_review → new
 *   POST /settings/queues/{queue_id}/items/{item_id}/reject    pending_review → failed (retry policy follows)
 *   POST /settings/queues/{queue_id}/items/redrive             dead_letter → new
 * The rules live in core (queue-items/review.ts).
 */
export function queueItemReviewRoutes(rc: RouteContext): AppRouter {
  const { router, add } = routeGroup(rc, { tags: TAGS, auth: ADMIN });
  const { deps } = rc;

  for (const decision of ['approve', 'reject'] as const) {
    add(
      {
        method: 'post',
        path: `/settings/queues/:queue_id/items/:item_id/${decision}`,
        operationId: decision === 'approve' ? 'approveQueueItem' : 'rejectQueueItem',
        summary: decision === 'approve' ? 'Approve a queue item pending review' : 'Reject a queue item pending review',
        description:
          decision === 'approve'
            ? 'pending_review → new: the item goes back to the queue and is processed again. Records reviewed_by (the ' +
              "admin's e-mail) and reviewed_at. 404 when the queue or the item is not in the workspace; 409 when the " +
              'item is not pending review.'
            : 'pending_review → failed, with `reason` (or a default text) as error_message; the queue retry policy then ' +
              'moves it to new (retries remain) or dead_letter. Records reviewed_by and reviewed_at. 404 / 409 as for approve.',
        params: QueueItemPathParams,
        body: decision === 'approve' ? ApproveItemBody : RejectItemBody,
        response: QueueItemResponse,
        errors: [404, 409, 422],
      },
      async (ctx, input) => {
        const params = input.params();
        const body = input.body() as { comment?: string; reason?: string };
        const item = await deps.engine.review.decide(
          actorOf(ctx),
          { queueId: params.queue_id, itemId: params.item_id },
          decision === 'approve' ? { approve: true, comment: body.comment } : { approve: false, reason: body.reason },
        );
        ok(ctx, item);
      },
    );
  }

  add(
    {
      method: 'post',
      path: '/settings/queues/:queue_id/items/redrive',
      operationId: 'redriveQueueItems',
      summary: 'Re-drive dead-letter items of a queue',
      description:
        'dead_letter → new for the listed items (those not in dead_letter are left alone), or for every dead-letter ' +
        'item of the queue when `item_ids` is omitted. retry_count starts again at 0. Answers how many moved.',
      params: QueuePathParams,
      body: RedriveBody,
      response: RedriveResponse,
      errors: [404, 422],
    },
    async (ctx, input) => {
      const params = input.params();
      const redriven = await deps.engine.review.redrive(actorOf(ctx), params.queue_id, () => input.body());
      ok(ctx, { redriven });
    },
  );

  return router;
}
