import { useEffect, useId, useRef, type ReactNode } from 'react';
import { t } from '../i18n';

/**
 * A confirmation as a native modal <dialog>: showModal() makes the rest of the page inert (the
 * focus stays inside), Escape closes it (the `cancel` event), and the focus goes back to the
 * control that opened it.
 */
export function ConfirmDialog({ open, title, children, confirmLabel, danger = false, busy = false, error, onConfirm, onCancel }: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  error?: string | null;
  onConfirm(): void;
  onCancel(): void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const opener = useRef<HTMLElement | null>(null);
  // a page may hold more than one dialog (a machine's rotation and deactivation): ids of their own
  const id = useId();

  useEffect(() => {
    const el = dialog.current;
    if (!el) return;
    if (open && !el.open) {
      opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      el.showModal();
    } else if (!open && el.open) {
      el.close();
    }
  }, [open]);

  function restoreFocus() {
    const back = opener.current;
    opener.current = null;
    // the opener may have gone (a revoked key's row changes): then the page's main takes the focus
    if (back && back.isConnected) back.focus();
    else document.getElementById('content')?.focus();
  }

  return (
    <dialog ref={dialog} className="confirm" aria-labelledby={`${id}-title`} aria-describedby={`${id}-body`}
      onCancel={(e) => { e.preventDefault(); if (!busy) onCancel(); }}
      onClose={restoreFocus}>
      <h2 id={`${id}-title`}>{title}</h2>
      <div id={`${id}-body`}>{children}</div>
      {error && <p className="form-error" role="alert">{error}</p>}
      <div className="dialog-actions">
        <button type="button" className="secondary" onClick={onCancel} disabled={busy} autoFocus>{t.common.cancel}</button>
        <button type="button" className={danger ? 'danger' : undefined} onClick={onConfirm} disabled={busy}>{confirmLabel}</button>
      </div>
    </dialog>
  );
}
