import { t } from '../i18n';

const LABELS = { item: t.status, machine: t.machineStatus, job: t.jobStatus };

/** A status as a word (never as colour alone), coloured by its class for a quick scan. */
export function StatusBadge({ kind, status }: { kind: keyof typeof LABELS; status: string }) {
  return <span className={`badge badge-${status}`}>{LABELS[kind][status] ?? status}</span>;
}
