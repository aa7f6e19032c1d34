import { useQuery } from '@tanstack/react-query';
import { nameIn } from '../lib/catalogue';
import { useIsAdmin, useSession } from '../session-context';

export type CatalogueOptions = ReturnType<typeof useCatalogueOptions>;

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
  return {
    processes: processes.data?.data ?? [],
    machines: machines.data?.data ?? [],
    queues: queues.data?.data ?? [],
    /** The selects' options failed to load: the form says so rather than offering an empty list. */
    failed: processes.isError || machines.isError || queues.isError,
    processName: (id: string) => nameIn(processes.data?.data, id),
    machineName: (id: string | null) => (id === null ? null : nameIn(machines.data?.data, id)),
    queueName: (id: string) => nameIn(queues.data?.data, id),
  };
}
