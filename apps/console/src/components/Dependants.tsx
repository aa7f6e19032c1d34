import { useQuery } from '@tanstack/react-query';
import { t } from '../i18n';
import { dependantsOf, type DependantLists } from '../lib/catalogue';
import { useSession } from '../session-context';

type Resource = 'process' | 'machine' | 'queue' | 'folder' | 'asset';

/** Which lists name each resource (see dependantsOf). */
const NEEDS: Record<Resource, Array<keyof DependantLists>> = {
  process: ['queues', 'triggers', 'schedules', 'processes'],
  machine: ['queues', 'triggers', 'schedules'],
  queue: ['triggers', 'processes'],
  folder: ['processes'],
  asset: ['processes'],
};

/**
 * What depends on a record about to be deactivated, read from the settings lists (their first
 * page, read fresh when the dialog opens) and, for a machine, its jobs waiting or running there.
 * Shown inside the deactivation's confirmation; the API deactivates anyway, this is so the admin
 * knows what stops or changes.
 */
export interface DependantsProps {
  resource: Resource;
  record: { id: string; name: string };
  /** a queue's items not finished yet (from its record's counters) */
  openItems?: number;
}

export function Dependants({ resource, record, openItems }: DependantsProps) {
  const { api } = useSession();
  const needs = NEEDS[resource];
  const fresh = { staleTime: 0, gcTime: 0 } as const;
  const processes = useQuery({ queryKey: ['dependants', 'processes'], queryFn: () => api.call('listWorkspaceProcesses', { query: { limit: 100, is_active: true } }), enabled: needs.includes('processes'), ...fresh });
  const queues = useQuery({ queryKey: ['dependants', 'queues'], queryFn: () => api.call('listWorkspaceQueues', { query: { limit: 100, is_active: true } }), enabled: needs.includes('queues'), ...fresh });
  const triggers = useQuery({ queryKey: ['dependants', 'triggers'], queryFn: () => api.call('listWorkspaceQueueTriggers', { query: { limit: 100 } }), enabled: needs.includes('triggers'), ...fresh });
  const schedules = useQuery({ queryKey: ['dependants', 'schedules'], queryFn: () => api.call('listWorkspaceSchedules', { query: { limit: 100 } }), enabled: needs.includes('schedules'), ...fresh });
  const jobCount = (status: 'pending' | 'running') => ({
    queryKey: ['dependants', 'jobs', record.id, status],
    queryFn: () => api.request('listWorkspaceJobs', { query: { machine_id: record.id, status, limit: 1 } }),
    enabled: resource === 'machine',
    ...fresh,
  });
  const pendingJobs = useQuery(jobCount('pending'));
  const runningJobs = useQuery(jobCount('running'));

  const reads = [processes, queues, triggers, schedules, pendingJobs, runningJobs].filter((q) => q.fetchStatus !== 'idle' || q.status !== 'pending');
  if (reads.some((q) => q.isError)) return <p className="form-error" data-dependants="failed">{t.catalogue.dependants.failed}</p>;
  if (reads.some((q) => q.isPending)) return <p className="muted" data-dependants="loading">{t.catalogue.dependants.loading}</p>;

  const groups = dependantsOf(resource, record, { processes: processes.data, queues: queues.data, triggers: triggers.data, schedules: schedules.data });
  const counts: string[] = [];
  if (resource === 'machine') {
    const pending = pendingJobs.data?.meta?.total ?? 0;
    const running = runningJobs.data?.meta?.total ?? 0;
    if (pending > 0) counts.push(t.catalogue.dependants.pendingJobs(pending));
    if (running > 0) counts.push(t.catalogue.dependants.runningJobs(running));
  }
  if (resource === 'queue' && openItems) counts.push(t.catalogue.dependants.openItems(openItems));

  if (groups.length === 0 && counts.length === 0) return <p data-dependants="none">{t.catalogue.dependants.none}</p>;
  return (
    <div data-dependants="some">
      <p><strong>{t.catalogue.dependants.title}</strong></p>
      <ul className="dependants">
        {groups.map((g) => (
          <li key={g.kind} data-dependant-kind={g.kind}>{t.catalogue.dependants.kinds[g.kind]}: {g.names.join(', ')}</li>
        ))}
        {counts.map((c) => <li key={c}>{c}</li>)}
      </ul>
    </div>
  );
}
