import { useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { DataTable } from '../components/DataTable';
import { Field } from '../components/Field';
import { Pager } from '../components/Pager';
import { Empty, ErrorState, Loading } from '../components/States';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { setFilters } from '../lib/api';
import { ApiError } from '../lib/errors';
import { DELIVERY_STATUSES, type Delivery } from '../lib/events';
import { formatCount } from '../lib/format';
import { useSession } from '../session-context';

const PAGE_SIZE = 20;
/** While a delivery is pending the list is read often, so a test's result shows soon; else now and then. */
const PENDING_REFRESH_MS = 2000;
const IDLE_REFRESH_MS = 15_000;

type Status = (typeof DELIVERY_STATUSES)[number];
const statusOf = (value: string | null): Status | '' => (DELIVERY_STATUSES as readonly string[]).includes(value ?? '') ? value as Status : '';

/**
 * A subscription's delivery log (admins): newest first, filtered by status (the one filter the
 * route has) and paged, both in the address; each delivery can be sent again.
 */
export function WebhookDeliveriesPage() {
  const { api } = useSession();
  const { webhookId = '' } = useParams();
  const queryClient = useQueryClient();
  const [params, setParams] = useSearchParams();
  const status = statusOf(params.get('status'));
  const page = Math.max(1, Number.parseInt(params.get('page') ?? '1', 10) || 1);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  const hook = useQuery({ queryKey: ['webhook', webhookId], queryFn: () => api.call('getWebhook', { path: { id: webhookId } }) });
  const deliveries = useQuery({
    queryKey: ['webhook-deliveries', webhookId, status, page],
    queryFn: () => api.request('listWebhookDeliveries', { path: { id: webhookId }, query: { page, limit: PAGE_SIZE, ...setFilters({ status }) } }),
    enabled: hook.isSuccess,
    refetchInterval: (q) => (q.state.data?.data.some((d) => d.status === 'pending') ? PENDING_REFRESH_MS : IDLE_REFRESH_MS),
  });

  const redeliver = useMutation({
    mutationFn: (d: Delivery) => api.request('redeliverWebhookEvent', { path: { id: webhookId, delivery_id: d.id } }),
    onSuccess: (_answer, d) => {
      setActionError(null);
      setNotice(t.deliveries.redelivered(d.event_id));
      void queryClient.invalidateQueries({ queryKey: ['webhook-deliveries', webhookId] });
    },
    onError: (err) => { setNotice(null); setActionError(err instanceof ApiError ? err.message : t.common.unexpectedError); },
  });

  const go = (next: { status?: Status | ''; page?: number }) => {
    const s = next.status ?? status;
    const p = next.page ?? 1;
    setParams(new URLSearchParams(setFilters({ status: s, page: p > 1 ? String(p) : '' })));
  };

  if (hook.isPending) return <Loading />;
  if (hook.isError) {
    return (
      <>
        <h1>{t.deliveries.title}</h1>
        {hook.error instanceof ApiError && hook.error.status === 404
          ? <p className="state empty">{t.deliveries.notFound}</p>
          : <ErrorState error={hook.error} onRetry={() => void hook.refetch()} />}
        <Link to="/webhooks">{t.deliveries.back}</Link>
      </>
    );
  }
  const list = deliveries.data?.data ?? [];
  const meta = deliveries.data?.meta;
  return (
    <>
      <p><Link to="/webhooks">{t.deliveries.back}</Link></p>
      <h1>{t.deliveries.of(hook.data.url)}</h1>
      <p className="muted">{t.deliveries.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>
      {actionError && <p className="form-error" role="alert">{actionError}</p>}

      <div className="card wide filters-card">
        <div className="filters">
          <Field id="f-status" label={t.deliveries.status} hint={t.deliveries.filtersNote}>
            <select id="f-status" value={status} aria-describedby="f-status-hint" onChange={(e) => go({ status: statusOf(e.target.value) })}>
              <option value="">{t.deliveries.anyStatus}</option>
              {DELIVERY_STATUSES.map((s) => <option key={s} value={s}>{t.deliveries.statuses[s]}</option>)}
            </select>
          </Field>
        </div>
      </div>

      {deliveries.isPending ? <Loading />
        : deliveries.isError ? <ErrorState error={deliveries.error} onRetry={() => void deliveries.refetch()} />
        : list.length === 0 ? <Empty>{t.deliveries.empty}</Empty>
        : (
          <>
            <DataTable
              caption={t.deliveries.caption}
              className="deliveries"
              head={<>
                <th scope="col">{t.deliveries.event}</th>
                <th scope="col">{t.deliveries.status}</th>
                <th scope="col" className="num">{t.deliveries.attempts}</th>
                <th scope="col">{t.deliveries.response}</th>
                <th scope="col">{t.deliveries.lastAttempt}</th>
                <th scope="col">{t.deliveries.nextAttempt}</th>
                <th scope="col">{t.deliveries.created}</th>
                <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
              </>}
              rows={list}
              row={(d) => (
                <tr key={d.id} data-delivery={d.id} data-event-type={d.event_type} data-status={d.status}>
                  <th scope="row">{t.eventTypes[d.event_type] ?? d.event_type}<br /><code className="small">{d.event_id}</code></th>
                  <td><span className={`badge badge-${d.status}`}>{t.deliveries.statuses[d.status] ?? d.status}</span></td>
                  <td className="num">{d.attempts}</td>
                  <td className="wrap">
                    {d.last_status_code !== null && <code>{d.last_status_code}</code>}
                    {d.last_duration_ms !== null && <span className="muted small"> · {t.deliveries.ms(d.last_duration_ms)}</span>}
                    {d.last_error && <><br /><span className="small">{d.last_error}</span></>}
                    {d.last_status_code === null && !d.last_error && <span className="muted">{t.common.none}</span>}
                  </td>
                  <td><Time iso={d.last_attempt_at} /></td>
                  <td><Time iso={d.status === 'pending' ? d.next_attempt_at : null} /></td>
                  <td><Time iso={d.created_at} /></td>
                  <td><div className="row-actions">
                    <button type="button" className="secondary" aria-label={t.deliveries.redeliverLabel(d.event_id)} disabled={redeliver.isPending}
                      onClick={() => redeliver.mutate(d)}>{t.deliveries.redeliver}</button>
                  </div></td>
                </tr>
              )}
            />
            {meta && <Pager page={meta.page} pages={Math.max(1, meta.pages)} total={t.deliveries.total(formatCount(meta.total, t.locale))} onPage={(p) => go({ page: p })} />}
          </>
        )}
    </>
  );
}
