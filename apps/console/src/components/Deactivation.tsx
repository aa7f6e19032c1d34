import { useState, type ReactNode } from 'react';
import { useMutation } from '@tanstack/react-query';
import { t } from '../i18n';
import { ApiError } from '../lib/errors';
import { ConfirmDialog } from './ConfirmDialog';

/**
 * Deactivating a record of an admin list (its operation, e.g. deactivateSchedule, by id): the
 * record asked about, the request, and the dialog's error. `ask` opens the confirmation; `onDone`
 * gets the answer.
 */
export function useDeactivation<T extends { id: string }>(deactivate: (id: string) => Promise<{ data: T }>, onDone: (record: T) => void) {
  const [pending, setPending] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: (record: T) => deactivate(record.id),
    onSuccess: ({ data }) => { setPending(null); onDone(data); },
    onError: (err) => setError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });
  return {
    pending,
    error,
    busy: mutation.isPending,
    ask: (record: T) => { setError(null); setPending(record); },
    confirm: () => { if (pending) mutation.mutate(pending); },
    cancel: () => setPending(null),
  };
}

/** The confirmation of a deactivation; `title` names the record asked about. */
export function DeactivateDialog<T extends { id: string }>({ deactivation: d, title, children }: {
  deactivation: ReturnType<typeof useDeactivation<T>>;
  title(record: T): string;
  children: ReactNode;
}) {
  return (
    <ConfirmDialog
      open={d.pending !== null}
      title={d.pending ? title(d.pending) : ''}
      confirmLabel={t.admin.deactivate}
      danger
      busy={d.busy}
      error={d.error}
      onConfirm={d.confirm}
      onCancel={d.cancel}
    >
      {children}
    </ConfirmDialog>
  );
}
