import { useEffect, useState, type FormEvent } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { BulkActions } from '../components/BulkActions';
import { QueueCharts } from '../charts/SeriesCharts';
import { Pager } from '../components/Pager';
import { Empty, ErrorState, Loading } from '../components/States';
import { FailureKind, StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { ApiError } from '../lib/errors';
import { formatCount, pageCount } from '../lib/format';
import { forecastSentence } from '../lib/forecast';
import { ITEM_STATUSES, setFilters, type ItemStatus, type QueueItem } from '../lib/api';
import { useIsAdmin, useSession } from '../session-context';
import { ItemDetail } from './ItemDetail';
import { QueueFigures, REFRESH_MS } from './Overview';
import { nextFilterParams } from '../lib/filters';
import { EXCEPTION_TYPES, exceptionTypeParam, failedLastHourSentence, failedNowSentence } from '../lib/exceptions';

const PAGE_SIZE = 20;

/** A queue: its figures, its items (status and exception filters, reference search, paging), an item's detail, and the admin's actions. */
export function QueuePage() {
  const { queueId = '' } = useParams();
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const [params, setParams] = useSearchParams();
  const status = (ITEM_STATUSES as readonly string[]).includes(params.get('status') ?? '') ? (params.get('status') as ItemStatus) : '';
  const reference = params.get('reference') ?? '';
  const exceptionType = exceptionTypeParam(params.get('exception_type'));
  const page = Math.max(1, Number(params.get('page')) || 1);
  const [referenceInput, setReferenceInput] = useState(reference);
  const [selected, setSelected] = useState<QueueItem | null>(null);
  const [picked, setPicked] = useState<Set<string>>(new Set());
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  useEffect(() => setReferenceInput(reference), [reference]);

  const queue = useQuery({ queryKey: ['queue', queueId], queryFn: () => api.request('getQueue', { path: { id: queueId } }) });
  const stats = useQuery({
    queryKey: ['queue-stats', queueId],
    queryFn: () => api.request('getQueueStats', { path: { queue_id: queueId } }),
    refetchInterval: REFRESH_MS,
  });
  const items = useQuery({
    queryKey: ['queue-items', queueId, status, exceptionType, reference, page],
    queryFn: () => api.request('listWorkspaceQueueItems', {
      path: { queue_id: queueId }, query: setFilters({ status, exception_type: exceptionType, reference, page, limit: PAGE_SIZE }),
    }),
    refetchInterval: REFRESH_MS,
    placeholderData: keepPreviousData, // the table stays while the next page loads, no blank flash
  });

  const refreshAll = () => queryClient.invalidateQueries({ predicate: (q) => q.queryKey.includes(queueId) || q.queryKey[0] === 'queues' });

  const pause = useMutation({
    mutationFn: (paused: boolean) => api.request(paused ? 'pauseQueue' : 'resumeQueue', { path: { queue_id: queueId } }),
    onSuccess: () => { setActionError(null); void refreshAll(); },
    onError: (err) => setActionError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });
  const redrive = useMutation({
    mutationFn: (ids: string[] | null) => api.request('redriveQueueItems', { path: { queue_id: queueId }, body: ids ? { item_ids: ids } : {} }),
    onSuccess: ({ data }) => { setActionError(null); setNotice(t.queue.redriven(data.redriven)); setPicked(new Set()); void refreshAll(); },
    onError: (err) => setActionError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });

  function setFilter(changes: Record<string, string>) {
    setParams(nextFilterParams(window.location.search, changes));
  }

  function search(e: FormEvent) {
    e.preventDefault();
    setFilter({ reference: referenceInput.trim() });
  }

  if (queue.isPending) return <Loading />;
  if (queue.isError) return <><p><Link to="/">{t.queue.back}</Link></p><ErrorState error={queue.error} onRetry={() => void queue.refetch()} /></>;
  const q = queue.data.data;
  const paused = stats.data?.data.is_paused ?? q.is_paused;
  const deadLetters = stats.data?.data.counts.dead_letter ?? q.item_counts.dead_letter;
  const meta = items.data?.meta;
  const pages = meta ? pageCount(meta.total, meta.limit) : 1;
  const filtered = !!status || !!exceptionType || !!reference;

  return (
    <>
      <p><Link to="/">{t.queue.back}</Link></p>
      <div className="title-row">
        <h1>{t.queue.title(q.name)} {paused && <span className="badge badge-paused">{t.overview.paused}</span>}</h1>
        {isAdmin && (
          <button type="button" className={paused ? undefined : 'secondary'} disabled={pause.isPending} onClick={() => pause.mutate(!paused)}>
            {paused ? t.queue.resume : t.queue.pause}
          </button>
        )}
      </div>
      {q.description && <p className="muted">{q.description}</p>}
      {paused && <p className="notice">{t.queue.pausedNotice}</p>}
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>
      {actionError && <p className="form-error" role="alert">{actionError}</p>}

      <section aria-label={t.overview.countsCaption(q.name)} className="card wide">
        {stats.isPending ? <Loading /> : stats.isError ? <ErrorState error={stats.error} onRetry={() => void stats.refetch()} /> : (
          <>
            <p className={`forecast${(stats.data.data.forecast.late_items ?? 0) > 0 ? ' warn' : ''}`} data-forecast>
              <strong>{t.forecast.label}:</strong> {forecastSentence(stats.data.data.forecast, t.forecast, t.locale, new Date())}
            </p>
            <p className="failures" data-failed-now>
              <strong>{t.exceptions.failedNow}:</strong> {failedNowSentence(stats.data.data, t.exceptions, t.locale)}
            </p>
            <p className="failures" data-failed-last-hour>
              <strong>{t.exceptions.failedLastHour}:</strong> {failedLastHourSentence(stats.data.data, t.exceptions, t.locale)}
            </p>
            <QueueFigures name={q.name} stats={stats.data.data} />
          </>
        )}
      </section>

      <QueueCharts queueId={queueId} every={REFRESH_MS} />

      <section aria-labelledby="items-title">
        <h2 id="items-title">{t.queue.items}</h2>
        <div className="filters">
          <div className="field">
            <label htmlFor="status-filter">{t.queue.filterStatus}</label>
            <select id="status-filter" value={status} onChange={(e) => setFilter({ status: e.target.value })}>
              <option value="">{t.queue.allStatuses}</option>
              {ITEM_STATUSES.map((s) => <option key={s} value={s}>{t.status[s]}</option>)}
            </select>
          </div>
          <div className="field">
            <label htmlFor="exception-filter">{t.exceptions.filter}</label>
            <select id="exception-filter" value={exceptionType} onChange={(e) => setFilter({ exception_type: e.target.value })}>
              <option value="">{t.exceptions.all}</option>
              {EXCEPTION_TYPES.map((k) => <option key={k} value={k}>{t.exceptions.options[k]}</option>)}
            </select>
          </div>
          <form role="search" onSubmit={search} className="search">
            <div className="field">
              <label htmlFor="reference-search">{t.queue.searchReference}</label>
              <input id="reference-search" type="search" value={referenceInput} maxLength={255}
                onChange={(e) => setReferenceInput(e.target.value)} aria-describedby="reference-hint" />
              <span className="hint" id="reference-hint">{t.queue.searchHint}</span>
            </div>
            <button type="submit">{t.queue.search}</button>
            {reference && <button type="button" className="secondary" onClick={() => setFilter({ reference: '' })}>{t.queue.clearSearch}</button>}
          </form>
          {isAdmin && deadLetters > 0 && (
            <div className="actions">
              {picked.size > 0 && <button type="button" disabled={redrive.isPending} onClick={() => redrive.mutate([...picked])}>{t.queue.redriveSelected} ({picked.size})</button>}
              <button type="button" className="secondary" disabled={redrive.isPending} onClick={() => redrive.mutate(null)}>{t.queue.redriveAll} ({formatCount(deadLetters, t.locale)})</button>
            </div>
          )}
        </div>

        {isAdmin && (
          <BulkActions target={{ kind: 'items', queueId, filter: setFilters({ status: status as ItemStatus, exception_type: exceptionType, reference }) }} onChanged={() => void refreshAll()} />
        )}

        {items.isPending ? <Loading />
          : items.isError ? <ErrorState error={items.error} onRetry={() => void items.refetch()} />
          : items.data.data.length === 0 ? <Empty>{filtered ? t.queue.noItems : t.queue.emptyQueue}</Empty>
          : (
            <div className="table-wrap">
              <table className="items">
                <caption className="visually-hidden">{t.queue.items}</caption>
                <thead>
                  <tr>
                    {isAdmin && <th scope="col"><span className="visually-hidden">{t.queue.redriveSelected}</span></th>}
                    <th scope="col">{t.queue.reference}</th>
                    <th scope="col">{t.queue.status}</th>
                    <th scope="col">{t.queue.priority}</th>
                    <th scope="col" className="num">{t.queue.retries}</th>
                    <th scope="col">{t.queue.created}</th>
                  </tr>
                </thead>
                <tbody>
                  {items.data.data.map((item) => (
                    <tr key={item.id} data-item={item.reference ?? item.id} aria-current={selected?.id === item.id ? 'true' : undefined}>
                      {isAdmin && (
                        <td>
                          {item.status === 'dead_letter' && (
                            <input type="checkbox" aria-label={t.queue.selectItem(item.reference ?? item.id)} checked={picked.has(item.id)}
                              onChange={(e) => setPicked((p) => { const n = new Set(p); e.target.checked ? n.add(item.id) : n.delete(item.id); return n; })} />
                          )}
                        </td>
                      )}
                      <td>
                        <button type="button" className="link" onClick={() => { setSelected(item); setNotice(null); }}
                          aria-label={`${t.queue.detail}: ${item.reference ?? t.queue.noReference}`}>
                          {item.reference ?? <span className="muted">{t.queue.noReference}</span>}
                        </button>
                      </td>
                      <td>
                        <StatusBadge kind="item" status={item.status} />
                        <FailureKind row={item} />
                      </td>
                      <td>{t.queue.priorities[item.priority] ?? item.priority}</td>
                      <td className="num">{item.retry_count}</td>
                      <td><Time iso={item.created_at} /></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        {meta && meta.total > 0 && (
          <Pager page={page} pages={pages} total={t.queue.total(formatCount(meta.total, t.locale))} onPage={(n) => setFilter({ page: String(n) })} />
        )}
      </section>

      {selected && (
        <ItemDetail
          key={selected.id}
          item={selected}
          canAct={isAdmin}
          onClose={() => setSelected(null)}
          onChanged={(row, message) => { setSelected(row); setNotice(message); void refreshAll(); }}
        />
      )}
    </>
  );
}
