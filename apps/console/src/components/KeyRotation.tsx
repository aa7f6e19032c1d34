import { useState } from 'react';
import { useMutation } from '@tanstack/react-query';
import { t } from '../i18n';
import type { Machine } from '../lib/api';
import { ApiError } from '../lib/errors';
import { useSession } from '../session-context';
import { ConfirmDialog } from './ConfirmDialog';

/**
 * Rotating a machine's key: the machine asked about, the request and the dialog's error. The old
 * key stops working at once, so `ask` opens a confirmation; `onRotated` gets the new key, which is
 * shown once.
 */
export function useKeyRotation(onRotated: (machine: { name: string; machine_key: string }) => void) {
  const { api } = useSession();
  const [pending, setPending] = useState<Machine | null>(null);
  const [error, setError] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: (m: Machine) => api.request('rotateMachineKey', { path: { id: m.id } }),
    onSuccess: ({ data }) => { setPending(null); onRotated(data); },
    onError: (err) => setError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });
  return {
    pending,
    error,
    busy: mutation.isPending,
    ask: (m: Machine) => { setError(null); setPending(m); },
    confirm: () => { if (pending) mutation.mutate(pending); },
    cancel: () => setPending(null),
  };
}

export function RotateKeyDialog({ rotation: r }: { rotation: ReturnType<typeof useKeyRotation> }) {
  return (
    <ConfirmDialog open={r.pending !== null} title={r.pending ? t.machinesAdmin.rotateTitle(r.pending.name) : ''} confirmLabel={t.machinesAdmin.rotate}
      danger busy={r.busy} error={r.error} onConfirm={r.confirm} onCancel={r.cancel}>
      <p>{t.machinesAdmin.rotateBody}</p>
    </ConfirmDialog>
  );
}
