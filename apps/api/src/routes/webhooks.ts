import { es, VALIDATION_TIME_LIMIT_MS } from '@svc/core';
import { WebhookTriggerBody, WebhookTriggerParams } from '@svc/core/schemas';
import type { AppRouter } from '../http/router';
import { routeGroup, type RouteContext } from '../http/route';
import { withIdempotency } from '../http/idempotency';
import { actorOf, created, JOB_TRIGGER_ANSWERS, recordIn } from './jobs';

/**
 * The per-process inbound webhook: any valid key of a tenant whose plan has
 * `webhooks`; the checks run in the contract's order inside core's triggerJobByWebhook.
 */
export function webhookRoutes(rc: RouteContext): AppRouter {
  const { router, add } = routeGroup(rc);
  const { deps } = rc;

  add(
    {
      method: 'post',
      path: '/webhooks/trigger/:process_id',
      operationId: 'triggerJobByWebhook',
      summary: 'Trigger a job of a process through its webhook',
      description:
        'No scope needed, any valid key. Checks in order after the key (401), the rate limit (429, 60/min per key ' +
        'whatever the IP) and allowed_ips (403): 1 plan feature `webhooks` (403); 2 monthly execution quota (429 ' +
        '`QUOTA_EXCEEDED`; consumed only when the job is created); 3 active subscription (403); 4 process exists in ' +
        'the tenant and is active (404); 5 body (422: `machine_id` missing or not a UUID, unknown fields), then ' +
        `input_data against the process input_schema (422 \`${es.inputData.required}\` / ` +
        `\`${es.inputData.invalidPrefix} …\`, also when the validation runs out of its ${VALIDATION_TIME_LIMIT_MS} ms budget or the ` +
        'stored schema exceeds the limits of admin-supplied schemas); `machine_id` naming no active machine of the tenant → 422. ' +
        'The job starts pending with priority 3; each trigger writes an audit-log row `trigger_job` / `webhook`.',
      tags: ['jobs'],
      auth: { kind: 'api_key', feature: 'webhooks' },
      params: WebhookTriggerParams,
      body: WebhookTriggerBody,
      ...JOB_TRIGGER_ANSWERS,
    },
    async (ctx, input) => {
      await withIdempotency(ctx, deps, 'webhooks.trigger', input.peekBody(), async (claim) => {
        const job = await deps.engine.jobs.triggerByWebhook(actorOf(ctx.state), {
          rawProcessId: ctx.params.process_id ?? '',
          processId: () => input.params().process_id,
          body: input.body,
        }, recordIn(claim));
        return created(job);
      });
    },
  );

  return router;
}
