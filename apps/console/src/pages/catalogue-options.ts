import { useQuery } from '@tanstack/react-query';
import { useIsAdmin, useSession } from '../session-context';

/**
 * The processes, machines and queues the schedule and trigger pages name and offer in their
 * selects. Processes are an admin read in the API, so a member's page shows a process by its id.
 */
export function useCatalogueOptions(need: { queues?: boolean } = {}) {
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const processes = useQuery({ queryKey: ['options', 'processes'], queryFn: () => api.request('listWorkspaceProcesses', { query: { limit: 100 } }), enabled: isAdmin });
  const machines = useQuery({ queryKey: ['options', 'machines'], queryFn: () => api.request('listWorkspaceMachines', { query: { limit: 100 } }) });
  const queues = useQuery({ queryKey: ['options', 'queues'], queryFn: () => api.request('listWorkspaceQueues', { query: { limit: 100 } }), enabled: !!need.queues });
  const nameOf = (list: Array<{ id: string; name: string }> | undefined, id: string | null) =>
    id === null ? null : list?.find((x) => x.id === id)?.name ?? `${id.slice(0, 8)}…`;
  return {
    processes: processes.data?.data ?? [],
    machines: machines.data?.data ?? [],
    queues: queues.data?.data ?? [],
    /** The selects' options failed to load: the form says so rather than offering an empty list. */
    failed: processes.isError || machines.isError || queues.isError,
    processName: (id: string) => nameOf(processes.data?.data, id)!,
    machineName: (id: string | null) => nameOf(machines.data?.data, id),
    queueName: (id: string) => nameOf(queues.data?.data, id)!,
  };
}
