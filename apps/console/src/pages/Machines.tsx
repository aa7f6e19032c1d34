import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { MachineCharts } from '../charts/SeriesCharts';
import { DataTable } from '../components/DataTable';
import { Empty, ErrorState, Loading } from '../components/States';
import { StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { formatCount } from '../lib/format';
import { FASTEST_REFRESH_MS } from '../lib/refresh';
import type { Machine } from '../lib/api';
import { useSession } from '../session-context';

/** Every machine of the workspace, active or not: status, slots, last heartbeat, kind. Reads again by itself. */
export function MachinesPage() {
  const { api } = useSession();
  const machines = useQuery({
    queryKey: ['machines', 'all'],
    queryFn: () => api.request('listWorkspaceMachines', { query: { limit: 100 } }),
    refetchInterval: FASTEST_REFRESH_MS,
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <h1>{t.machines.title}</h1>
      <p className="muted small">{t.machines.autoRefresh}</p>
      {machines.isPending ? <Loading />
        : machines.isError ? <ErrorState error={machines.error} onRetry={() => void machines.refetch()} />
        : machines.data.data.length === 0 ? <Empty>{t.machines.none}</Empty>
        : (
          <>
            <MachineCharts every={FASTEST_REFRESH_MS} />
            <DataTable
              caption={t.machines.list}
              className="machines"
              head={<>
                <th scope="col">{t.machines.name}</th>
                <th scope="col">{t.machines.status}</th>
                <th scope="col" className="num">{t.machines.slots}</th>
                <th scope="col">{t.machines.heartbeat}</th>
                <th scope="col">{t.machines.kind}</th>
                <th scope="col">{t.machines.active}</th>
                <th scope="col">{t.machines.agent}</th>
              </>}
              rows={machines.data.data}
              row={(m) => (
                <tr key={m.id} data-machine={m.name}>
                  <th scope="row">{m.name}{m.description && <span className="muted small block">{m.description}</span>}</th>
                  <td data-cell="status"><StatusBadge kind="machine" status={m.status} /></td>
                  <td className="num" data-cell="slots">{t.machines.slotsValue(m.running_jobs, m.slots)}</td>
                  <td><Time iso={m.last_heartbeat_at} /></td>
                  <td data-cell="kind">{m.kind ? t.machines.kinds[m.kind] ?? m.kind : t.common.none}</td>
                  <td data-cell="active">{m.is_active ? t.common.yes : t.common.no}</td>
                  <td className="small">{m.agent_version ?? t.common.none}</td>
                </tr>
              )}
            />
            {(machines.data.meta?.total ?? 0) > machines.data.data.length && (
              <p className="muted">{t.machines.total(formatCount(machines.data.meta!.total, t.locale))}</p>
            )}
          </>
        )}
    </>
  );
}
