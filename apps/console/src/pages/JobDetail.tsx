import { useEffect, useRef, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { ProgressBar } from '../components/ProgressBar';
import { ErrorState, Loading } from '../components/States';
import { ExceptionBadge, StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { ApiError } from '../lib/errors';
import { formatCount, formatDuration } from '../lib/format';
import { canStop, elapsedMs, isLive, jobOrigin } from '../lib/jobs';
import type { Answer, Job, JobLogs } from '../lib/api';
import { useIsAdmin, useSession } from '../session-context';
import { JobInput } from './JobInput';

/** While a job may still change, its page reads it (and its log) this often: two reads, 40 a minute. */
const LIVE_REFRESH_MS = 3_000;

/** One job: status, live progress, timestamps, origin, data, metrics, log; stop and answer for an admin. */
export function JobDetailPage() {
  const { jobId = '' } = useParams();
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  const job = useQuery({
    queryKey: ['job', jobId],
    queryFn: () => api.request('getWorkspaceJob', { path: { job_id: jobId } }),
    refetchInterval: (q) => (q.state.data && !isLive(q.state.data.data.status) ? false : LIVE_REFRESH_MS),
  });
  const live = job.data ? isLive(job.data.data.status) : true;
  const logs = useQuery({
    queryKey: ['job-logs', jobId],
    queryFn: () => api.request('readJobLogs', { path: { job_id: jobId } }),
    enabled: job.isSuccess,
    refetchInterval: live ? LIVE_REFRESH_MS : false,
  });

  // the log's last lines may come just before the end: read it once more when the job ends
  const status = job.data?.data.status;
  const wasLive = useRef(false);
  const refetchLogs = logs.refetch;
  useEffect(() => {
    if (status === undefined) return;
    if (wasLive.current && !isLive(status)) void refetchLogs();
    wasLive.current = isLive(status);
  }, [status, refetchLogs]);

  const refresh = () => queryClient.invalidateQueries({ predicate: (q) => q.queryKey[0] === 'jobs' || q.queryKey.includes(jobId) });

  const stop = useMutation({
    mutationFn: () => api.request('stopWorkspaceJob', { path: { job_id: jobId } }),
    onSuccess: () => { setConfirming(false); setActionError(null); setNotice(t.jobs.stopped); void refresh(); },
    onError: (err) => { setConfirming(false); setActionError(err instanceof ApiError ? err.message : t.common.unexpectedError); },
  });

  if (job.isPending) return <Loading />;
  if (job.isError) return <><p><Link to="/jobs">{t.jobs.back}</Link></p><ErrorState error={job.error} onRetry={() => void job.refetch()} /></>;
  const j = job.data.data;
  const process = j.process_name ?? j.process_id;
  const elapsed = elapsedMs(j, new Date());
  const origin = jobOrigin(j);

  return (
    <>
      <p><Link to="/jobs">{t.jobs.back}</Link></p>
      <div className="title-row">
        <h1>{t.jobs.detailTitle(process)} <span data-job-status={j.status}><StatusBadge kind="job" status={j.status} /></span></h1>
        {isAdmin && canStop(j) && !confirming && (
          <button type="button" className="danger" onClick={() => setConfirming(true)}>{t.jobs.stop}</button>
        )}
      </div>
      {confirming && (
        <div className="notice confirm" role="alertdialog" aria-labelledby="stop-confirm-text">
          <p id="stop-confirm-text">{t.jobs.stopConfirm}</p>
          <button type="button" className="danger" disabled={stop.isPending} onClick={() => stop.mutate()} autoFocus>{t.jobs.stop}</button>{' '}
          <button type="button" className="secondary" onClick={() => setConfirming(false)}>{t.common.cancel}</button>
        </div>
      )}
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>
      {actionError && <p className="form-error" role="alert">{actionError}</p>}
      {j.stop_requested && isLive(j.status) && <p className="notice">{t.jobs.stopRequested}</p>}

      <section className="card wide" aria-label={t.jobs.progress}>
        <ProgressBar job={j} />
        {j.progress_message && <p className="muted" data-progress-message>{j.progress_message}</p>}
        <dl className="props">
          <div><dt>{t.jobs.machine}</dt><dd>{j.machine_name ?? j.machine_id}</dd></div>
          <div><dt>{t.jobs.priority}</dt><dd>{t.queue.priorities[j.priority] ?? j.priority}</dd></div>
          <div><dt>{t.jobs.retries}</dt><dd>{j.retry_count}</dd></div>
          {/* failed jobs only: business (final, never retried by itself) or application */}
          {j.exception_type && <div><dt>{t.exceptions.detail}</dt><dd><ExceptionBadge type={j.exception_type} /></dd></div>}
          <div><dt>{t.jobs.attended}</dt><dd>{j.is_attended ? t.common.yes : t.common.no}</dd></div>
          <div><dt>{t.jobs.created}</dt><dd><Time iso={j.created_at} /></dd></div>
          <div><dt>{t.jobs.started}</dt><dd><Time iso={j.started_at} /></dd></div>
          <div><dt>{t.jobs.finished}</dt><dd><Time iso={j.finished_at} /></dd></div>
          <div><dt>{t.jobs.updated}</dt><dd><Time iso={j.updated_at} /></dd></div>
          <div><dt>{t.jobs.duration}</dt><dd>{elapsed === null ? t.common.none : formatDuration(elapsed, t.locale)}</dd></div>
          <div><dt>{t.jobs.origin}</dt><dd>{t.jobs.origins[origin]}</dd></div>
          <div><dt>{t.jobs.scheduleId}</dt><dd className="id">{j.schedule_id ?? t.common.none}</dd></div>
          <div><dt>{t.jobs.triggerId}</dt><dd className="id">{j.trigger_id ?? t.common.none}</dd></div>
          <div><dt>{t.jobs.id}</dt><dd className="id">{j.id}</dd></div>
        </dl>
      </section>

      {j.status === 'waiting_input' && j.pending_input_prompt && (
        <JobInput key={`${j.id}:${j.pending_input_prompt}`} job={j} canAnswer={isAdmin} onAnswered={(next) => {
          queryClient.setQueryData<Answer<Job>>(['job', jobId], { data: next });
          setNotice(t.jobs.answered);
          void refresh();
        }} />
      )}

      {j.error_message && <><h2>{t.jobs.error}</h2><p className="error-text" data-error-message>{j.error_message}</p></>}

      <div className="two-columns">
        <section aria-labelledby="input-title">
          <h2 id="input-title">{t.jobs.input}</h2>
          <JsonBlock value={j.input_data} label={t.jobs.input} />
        </section>
        <section aria-labelledby="output-title">
          <h2 id="output-title">{t.jobs.output}</h2>
          <JsonBlock value={j.output_data} label={t.jobs.output} />
        </section>
      </div>

      <section aria-labelledby="metrics-title">
        <h2 id="metrics-title">{t.jobs.metrics}</h2>
        {j.resource_metrics ? <Metrics m={j.resource_metrics} /> : <p className="muted">{t.jobs.noMetrics}</p>}
      </section>

      <section aria-labelledby="logs-title">
        <div className="title-row">
          <h2 id="logs-title">{t.jobs.logs}</h2>
          <button type="button" className="secondary" onClick={() => void logs.refetch()} disabled={logs.isFetching}>{t.jobs.refreshLogs}</button>
        </div>
        {logs.isPending ? <Loading />
          : logs.isError ? <ErrorState error={logs.error} onRetry={() => void logs.refetch()} />
          : <LogView logs={logs.data.data} />}
      </section>
    </>
  );
}

function JsonBlock({ value, label }: { value: Record<string, unknown> | null; label: string }) {
  if (value === null) return <p className="muted">{t.jobs.noData}</p>;
  return <pre tabIndex={0} role="region" aria-label={label}>{JSON.stringify(value, null, 2)}</pre>;
}

function Metrics({ m }: { m: NonNullable<Job['resource_metrics']> }) {
  const n = (v: number) => new Intl.NumberFormat(t.locale, { maximumFractionDigits: 1 }).format(v);
  return (
    <dl className="figures" data-metrics>
      <div><dt>{t.jobs.cpu}</dt><dd>{t.jobs.percentPair(n(m.cpu_percent_avg), n(m.cpu_percent_peak))}</dd></div>
      <div><dt>{t.jobs.ram}</dt><dd>{t.jobs.mbPair(n(m.ram_mb_avg), n(m.ram_mb_peak))}</dd></div>
      <div><dt>{t.jobs.disk}</dt><dd>{t.jobs.mbPair(n(m.disk_read_mb), n(m.disk_write_mb))}</dd></div>
      <div><dt>{t.jobs.duration}</dt><dd>{formatDuration(m.duration_seconds * 1000, t.locale)}</dd></div>
      <div><dt>{t.jobs.samples}</dt><dd>{formatCount(m.sample_count, t.locale)}</dd></div>
    </dl>
  );
}

function LogView({ logs }: { logs: JobLogs }) {
  if (logs.logs === null || logs.logs === '') return <p className="muted">{t.jobs.noLogs}</p>;
  return (
    <>
      <p className="muted small">
        {t.jobs.logsSize(formatCount(logs.size_bytes, t.locale))}
        {logs.archived && <> · {t.jobs.logsArchived}</>}
        {logs.dropped_bytes > 0 && <> · {t.jobs.logsDropped(formatCount(logs.dropped_bytes, t.locale))}</>}
      </p>
      <pre className="log" tabIndex={0} role="region" aria-label={t.jobs.logs} data-logs>{logs.logs}</pre>
    </>
  );
}
