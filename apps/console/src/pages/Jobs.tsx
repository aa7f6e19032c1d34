import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { BulkActions } from '../components/BulkActions';
import { DataTable } from '../components/DataTable';
import { ProgressBar } from '../components/ProgressBar';
import { Pager } from '../components/Pager';
import { Empty, ErrorState, Loading } from '../components/States';
import { StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { setFilters, type Job } from '../lib/api';
import { absoluteTime, formatCount, pageCount } from '../lib/format';
import { JOB_STATUSES } from '../lib/jobs';
import { FASTEST_REFRESH_MS } from '../lib/refresh';
import { useIsAdmin, useSession } from '../session-context';
import { nextFilterParams } from '../lib/filters';

const PAGE_SIZE = 20;
/** The filters' lists of processes and machines change rarely. */
const NAMES_STALE_MS = 60_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The workspace's jobs, newest first: filters (status, process, machine) in the address, paging, a read every 5 s. */
export function JobsPage() {
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const [params, setParams] = useSearchParams();
  const status = (JOB_STATUSES as readonly string[]).includes(params.get('status') ?? '') ? params.get('status')! : '';
  // an id that is not a UUID would only earn a 422: the filter ignores it
  const processId = UUID.test(params.get('process_id') ?? '') ? params.get('process_id')! : '';
  const machineId = UUID.test(params.get('machine_id') ?? '') ? params.get('machine_id')! : '';
  const page = Math.max(1, Number(params.get('page')) || 1);

  const jobs = useQuery({
    queryKey: ['jobs', 'list', status, processId, machineId, page],
    queryFn: () => api.request('listWorkspaceJobs', { query: setFilters({ status: status as Job['status'], process_id: processId, machine_id: machineId, page, limit: PAGE_SIZE }) }),
    refetchInterval: FASTEST_REFRESH_MS,
    placeholderData: keepPreviousData,
  });
  const processes = useQuery({
    queryKey: ['process-names'],
    queryFn: () => api.request('listWorkspaceProcesses', { query: { limit: 100 } }),
    staleTime: NAMES_STALE_MS,
  });
  const machines = useQuery({
    queryKey: ['machines', 'all'],
    queryFn: () => api.request('listWorkspaceMachines', { query: { limit: 100 } }),
    staleTime: NAMES_STALE_MS,
  });

  function setFilter(changes: Record<string, string>) {
    setParams(nextFilterParams(window.location.search, changes));
  }

  const meta = jobs.data?.meta;
  const pages = meta ? pageCount(meta.total, meta.limit) : 1;
  const filtered = !!status || !!processId || !!machineId;

  return (
    <>
      <div className="title-row">
        <h1>{t.jobs.title}</h1>
        {isAdmin && <Link className="button" to="/jobs/new">{t.trigger.open}</Link>}
      </div>
      <div className="filters">
        <div className="field">
          <label htmlFor="job-status-filter">{t.jobs.filterStatus}</label>
          <select id="job-status-filter" value={status} onChange={(e) => setFilter({ status: e.target.value })}>
            <option value="">{t.jobs.all}</option>
            {JOB_STATUSES.map((s) => <option key={s} value={s}>{t.jobStatus[s] ?? s}</option>)}
          </select>
        </div>
        <div className="field">
          <label htmlFor="job-process-filter">{t.jobs.filterProcess}</label>
          <select id="job-process-filter" value={processId} onChange={(e) => setFilter({ process_id: e.target.value })}>
            <option value="">{t.jobs.all}</option>
            {processes.data?.data.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </div>
        <div className="field">
          <label htmlFor="job-machine-filter">{t.jobs.filterMachine}</label>
          <select id="job-machine-filter" value={machineId} onChange={(e) => setFilter({ machine_id: e.target.value })}>
            <option value="">{t.jobs.allFem}</option>
            {machines.data?.data.map((m) => <option key={m.id} value={m.id}>{m.name}</option>)}
          </select>
        </div>
        {filtered && <button type="button" className="secondary" onClick={() => setParams(new URLSearchParams())}>{t.jobs.clearFilters}</button>}
      </div>

      {isAdmin && (
        <BulkActions
          target={{ kind: 'jobs', filter: setFilters({ status: status as Job['status'], process_id: processId, machine_id: machineId }) }}
          onChanged={() => void queryClient.invalidateQueries({ queryKey: ['jobs'] })}
        />
      )}

      {jobs.isPending ? <Loading />
        : jobs.isError ? <ErrorState error={jobs.error} onRetry={() => void jobs.refetch()} />
        : jobs.data.data.length === 0 ? <Empty>{filtered ? t.jobs.noJobs : t.jobs.emptyList}</Empty>
        : (
          <DataTable
            caption={t.jobs.list}
            className="jobs"
            head={<>
              <th scope="col">{t.jobs.process}</th>
              <th scope="col">{t.jobs.status}</th>
              <th scope="col">{t.jobs.progress}</th>
              <th scope="col">{t.jobs.machine}</th>
              <th scope="col">{t.jobs.created}</th>
              <th scope="col">{t.jobs.finished}</th>
            </>}
            rows={jobs.data.data}
            row={(job) => {
              const process = job.process_name ?? job.process_id;
              return (
                <tr key={job.id} data-job={job.id}>
                  <td>
                    <Link to={`/jobs/${job.id}`} aria-label={t.jobs.open(process, absoluteTime(job.created_at, t.locale))}>{process}</Link>
                  </td>
                  <td data-cell="status"><StatusBadge kind="job" status={job.status} /></td>
                  <td><ProgressBar job={job} label={`${t.jobs.progressLabel}: ${process}`} /></td>
                  <td>{job.machine_name ?? job.machine_id}</td>
                  <td><Time iso={job.created_at} /></td>
                  <td><Time iso={job.finished_at} /></td>
                </tr>
              );
            }}
          />
        )}
      {meta && meta.total > 0 && (
        <Pager page={page} pages={pages} total={t.jobs.total(formatCount(meta.total, t.locale))} onPage={(n) => setFilter({ page: String(n) })} />
      )}
    </>
  );
}
