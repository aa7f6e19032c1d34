import { useQuery, type UseQueryResult } from '@tanstack/react-query';
import { Link } from 'react-router';
import { QueueSparkline } from '../charts/SeriesCharts';
import { Empty, ErrorState, Loading } from '../components/States';
import { StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { formatCount, formatDuration } from '../lib/format';
import { FASTEST_REFRESH_MS, refreshIntervalMs } from '../lib/refresh';
import { ITEM_STATUSES, type Job, type Machine, type Queue, type QueueStats } from '../lib/api';
import { useSession } from '../session-context';
import type { Answer } from '../lib/api';

/** How often a page with a few reads (the queue page) reads again by itself. */
export const REFRESH_MS = FASTEST_REFRESH_MS;
/** a queue card reads its stats and its line (the hour's series) */
const READS_PER_QUEUE = 2;

export function OverviewPage() {
  const { api } = useSession();
  const queues = useQuery({
    queryKey: ['queues'],
    queryFn: () => api.request('listWorkspaceQueues', { query: { limit: 100, is_active: true } }),
    refetchInterval: (query) => refreshIntervalMs(3 + READS_PER_QUEUE * (query.state.data?.data.length ?? 0)),
  });
  // every read of the page at one pace: the queue list, each queue's stats, machines, failures
  const every = refreshIntervalMs(3 + READS_PER_QUEUE * (queues.data?.data.length ?? 0));
  return (
    <>
      <h1>{t.overview.title}</h1>
      <QueuesSection queues={queues} every={every} />
      <div className="two-columns">
        <MachinesSection every={every} />
        <FailuresSection every={every} />
      </div>
    </>
  );
}

function QueuesSection({ queues, every }: { queues: UseQueryResult<Answer<Queue[]>>; every: number }) {
  return (
    <section aria-labelledby="queues-title">
      <h2 id="queues-title">{t.overview.queues}</h2>
      {queues.isPending ? <Loading />
        : queues.isError ? <ErrorState error={queues.error} onRetry={() => void queues.refetch()} />
        : queues.data.data.length === 0 ? <Empty>{t.overview.noQueues}</Empty>
        : (
          <>
            <ul className="cards">{queues.data.data.map((q) => <QueueCard key={q.id} queue={q} every={every} />)}</ul>
            {(queues.data.meta?.total ?? 0) > queues.data.data.length && (
              <p className="muted">{t.overview.moreQueues(queues.data.data.length, queues.data.meta!.total)}</p>
            )}
          </>
        )}
    </section>
  );
}

function QueueCard({ queue, every }: { queue: Queue; every: number }) {
  const { api } = useSession();
  const stats = useQuery({
    queryKey: ['queue-stats', queue.id],
    queryFn: () => api.request('getQueueStats', { path: { queue_id: queue.id } }),
    refetchInterval: every,
  });
  const titleId = `queue-${queue.id}`;
  return (
    <li className="card" aria-labelledby={titleId} data-queue={queue.name}>
      <h3 id={titleId}>
        <Link to={`/queues/${queue.id}`} aria-label={t.overview.queueLink(queue.name)}>{queue.name}</Link>{' '}
        {(stats.data?.data.is_paused ?? queue.is_paused) && <span className="badge badge-paused">{t.overview.paused}</span>}
        {(stats.data?.data.forecast.late_items ?? 0) > 0 && (
          <span className="badge badge-late" data-late={stats.data!.data.forecast.late_items}>{t.forecast.lateBadge(formatCount(stats.data!.data.forecast.late_items!, t.locale))}</span>
        )}
      </h3>
      <QueueSparkline queueId={queue.id} name={queue.name} every={every} />
      {stats.isPending ? <Loading />
        : stats.isError ? <ErrorState error={stats.error} onRetry={() => void stats.refetch()} />
        : <QueueFigures name={queue.name} stats={stats.data.data} />}
    </li>
  );
}

export function QueueFigures({ name, stats }: { name: string; stats: QueueStats }) {
  const n = (v: number) => formatCount(v, t.locale);
  return (
    <>
      <dl className="figures">
        <div><dt>{t.overview.ready}</dt><dd data-figure="ready">{n(stats.ready)}</dd></div>
        <div className={stats.deadline_at_risk > 0 ? 'warn' : undefined}><dt>{t.overview.atRisk}</dt><dd data-figure="at-risk">{n(stats.deadline_at_risk)}</dd></div>
        <div><dt>{t.overview.completedLastHour}</dt><dd>{n(stats.completed_last_hour)}</dd></div>
        <div><dt>{t.overview.failedLastHour}</dt><dd>{n(stats.failed_last_hour)}</dd></div>
        <div><dt>{t.overview.avgProcessing}</dt><dd>{stats.avg_processing_ms_last_hour === null ? t.common.none : formatDuration(stats.avg_processing_ms_last_hour, t.locale)}</dd></div>
        <div><dt>{t.overview.consumers}</dt><dd>{n(stats.consumers_running)}</dd></div>
      </dl>
      <table className="counts">
        <caption className="visually-hidden">{t.overview.countsCaption(name)}</caption>
        <thead><tr><th scope="col">{t.overview.statusHeader}</th><th scope="col" className="num">{t.overview.countHeader}</th></tr></thead>
        <tbody>
          {ITEM_STATUSES.map((s) => (
            <tr key={s}><th scope="row"><StatusBadge kind="item" status={s} /></th><td className="num" data-count={s}>{n(stats.counts[s])}</td></tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function MachinesSection({ every }: { every: number }) {
  const { api } = useSession();
  const machines = useQuery({
    queryKey: ['machines'],
    queryFn: () => api.request('listWorkspaceMachines', { query: { limit: 100, is_active: true } }),
    refetchInterval: every,
  });
  return (
    <section aria-labelledby="machines-title">
      <h2 id="machines-title">{t.overview.machines}</h2>
      {machines.isPending ? <Loading />
        : machines.isError ? <ErrorState error={machines.error} onRetry={() => void machines.refetch()} />
        : machines.data.data.length === 0 ? <Empty>{t.overview.noMachines}</Empty>
        : (
          <>
            <ul className="tally" aria-label={t.overview.machinesSummary}>
              {(['online', 'busy', 'offline'] as const).map((s) => (
                <li key={s} data-machines={s}><StatusBadge kind="machine" status={s} /> {machines.data.data.filter((m) => m.status === s).length}</li>
              ))}
            </ul>
            <ul className="plain">
              {machines.data.data.map((m) => (
                <li key={m.id}><strong>{m.name}</strong> <StatusBadge kind="machine" status={m.status} /> <span className="muted small">{t.overview.slots(m.running_jobs, m.slots)} · {t.overview.lastHeartbeat} <Time iso={m.last_heartbeat_at} /></span></li>
              ))}
            </ul>
          </>
        )}
    </section>
  );
}

function FailuresSection({ every }: { every: number }) {
  const { api } = useSession();
  const jobs = useQuery({
    queryKey: ['jobs', 'failed'],
    queryFn: () => api.request('listWorkspaceJobs', { query: { status: 'failed', limit: 5 } }),
    refetchInterval: every,
  });
  return (
    <section aria-labelledby="failures-title">
      <h2 id="failures-title">{t.overview.latestFailures}</h2>
      {jobs.isPending ? <Loading />
        : jobs.isError ? <ErrorState error={jobs.error} onRetry={() => void jobs.refetch()} />
        : jobs.data.data.length === 0 ? <Empty>{t.overview.noFailures}</Empty>
        : (
          <ul className="plain failures">
            {jobs.data.data.map((j) => (
              <li key={j.id}>
                <Link to={`/jobs/${j.id}`}><strong>{j.process_name ?? j.process_id}</strong></Link> <span className="muted small">{t.overview.machine}: {j.machine_name ?? j.machine_id} · <Time iso={j.finished_at ?? j.created_at} /></span>
                <p className="error-text">{j.error_message ?? t.common.none}</p>
              </li>
            ))}
          </ul>
        )}
    </section>
  );
}
