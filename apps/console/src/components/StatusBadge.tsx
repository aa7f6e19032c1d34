import { t } from '../i18n';
import { failureKind, type ExceptionType } from '../lib/exceptions';

const LABELS = { item: t.status, machine: t.machineStatus, job: t.jobStatus };

/** A status as a word (never as colour alone), coloured by its class for a quick scan. */
export function StatusBadge({ kind, status }: { kind: keyof typeof LABELS; status: string }) {
  return <span className={`badge badge-${status}`}>{LABELS[kind][status] ?? status}</span>;
}

/** The kind of a failure, "Excepción de negocio" or "Excepción de aplicación". */
export function ExceptionBadge({ type }: { type: ExceptionType }) {
  return <span className={`badge badge-exception-${type}`} data-exception-type={type}>{t.exceptions.kinds[type]}</span>;
}

/** After a row's status: the kind of its failure, when it failed (nothing otherwise). */
export function FailureKind({ row }: { row: { status: string; exception_type: ExceptionType | null } }) {
  const kind = failureKind(row);
  return kind ? <> <ExceptionBadge type={kind} /></> : null;
}
