import { useState } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import type { BodyOf } from '@svc/client';
import { t } from '../i18n';
import { ApiError } from '../lib/errors';
import { formatCount } from '../lib/format';
import { retryMayMeetBusiness, retryNeedsBusiness } from '../lib/exceptions';
import type { BulkAction } from '../lib/api';
import { useSession } from '../session-context';
import { ConfirmDialog } from './ConfirmDialog';

type ItemFilter = NonNullable<BodyOf<'startWorkspaceQueueItemAction'>['filter']>;
type JobFilter = NonNullable<BodyOf<'startWorkspaceJobAction'>['filter']>;

/** What the panel acts on: a queue's items or the workspace's jobs, with the page's filters. */
export type BulkTarget =
  | { kind: 'items'; queueId: string; filter: ItemFilter }
  | { kind: 'jobs'; filter: JobFilter };

const ITEM_ACTIONS = ['redrive', 'retry', 'delete', 'set_priority', 'postpone'] as const;
const JOB_ACTIONS = ['stop', 'retry'] as const;
const POLL_MS = 1000;

/**
 * An admin's action on everything that matches the page's filters (docs/decisions/bulk-actions.md):
 * the count first (a dry run) in a confirmation, then the action's progress, read every second
 * while it runs in the background, with a way to stop it.
 */
export function BulkActions({ target, onChanged }: { target: BulkTarget; onChanged(): void }) {
  const { api } = useSession();
  const actions: readonly string[] = target.kind === 'items' ? ITEM_ACTIONS : JOB_ACTIONS;
  const labels = target.kind === 'items' ? t.bulk.itemActions : t.bulk.jobActions;
  const [action, setAction] = useState('');
  const [priority, setPriority] = useState(5);
  const [postpone, setPostpone] = useState('');
  const [includeBusiness, setIncludeBusiness] = useState(false);
  const [counted, setCounted] = useState<number | null>(null);
  const [tracked, setTracked] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  // business failures are final: a retry re-runs them only when the admin ticks the box, offered
  // only when the filter can match them (failed items or jobs, not only application failures)
  const offerBusiness = action === 'retry' && retryMayMeetBusiness(target);
  const withBusiness = offerBusiness && includeBusiness;

  function body(dryRun: boolean) {
    const extra = action === 'set_priority' ? { priority } : action === 'postpone' ? { postpone: postpone ? new Date(postpone).toISOString() : null }
      : withBusiness ? { include_business: true } : {};
    return { action, filter: target.filter, dry_run: dryRun, ...extra };
  }

  async function ask(dryRun: boolean) {
    const answer = target.kind === 'items'
      ? await api.call('startWorkspaceQueueItemAction', { path: { queue_id: target.queueId }, body: body(dryRun) as BodyOf<'startWorkspaceQueueItemAction'> })
      : await api.call('startWorkspaceJobAction', { body: body(dryRun) as BodyOf<'startWorkspaceJobAction'> });
    return answer;
  }

  const messageOf = (err: unknown) => (err instanceof ApiError ? err.message : t.common.unexpectedError);

  const count = useMutation({
    mutationFn: () => ask(true),
    onSuccess: (answer) => { setError(null); setNotice(null); setCounted(answer.total); },
    onError: (err) => setError(messageOf(err)),
  });

  const start = useMutation({
    mutationFn: () => ask(false),
    onSuccess: (answer) => {
      setCounted(null);
      if ('dry_run' in answer) return;
      finishedOrTracked(answer);
    },
    onError: (err) => setError(messageOf(err)),
  });

  function finishedOrTracked(a: BulkAction) {
    if (a.status === 'completed' || a.status === 'cancelled') {
      setTracked(null);
      const changed = formatCount(a.changed, t.locale);
      setNotice(a.status === 'completed' ? t.bulk.finished(changed) : t.bulk.cancelled(changed));
      onChanged();
    } else {
      setTracked(a.id);
    }
  }

  const progress = useQuery({
    queryKey: ['bulk-action', tracked],
    enabled: tracked !== null,
    queryFn: async () => {
      const a = await api.call('getWorkspaceBulkAction', { path: { action_id: tracked! } });
      if (a.status === 'completed' || a.status === 'cancelled') finishedOrTracked(a);
      return a;
    },
    refetchInterval: POLL_MS,
  });

  const cancel = useMutation({
    mutationFn: () => api.call('cancelWorkspaceBulkAction', { path: { action_id: tracked! } }),
    onSuccess: (a) => finishedOrTracked(a),
    onError: (err) => setError(messageOf(err)),
  });

  const running = tracked !== null ? progress.data : undefined;
  const actionLabel = labels[action] ?? action;
  const total = counted === null ? '' : formatCount(counted, t.locale);

  return (
    <section className="card bulk" aria-labelledby="bulk-title">
      <h2 id="bulk-title">{t.bulk.title}</h2>
      <p className="hint">{target.kind === 'items' ? t.bulk.scopeItems : t.bulk.scopeJobs}</p>
      <div className="filters">
        <div className="field">
          <label htmlFor="bulk-action">{t.bulk.action}</label>
          <select id="bulk-action" value={action} disabled={tracked !== null} onChange={(e) => { setAction(e.target.value); setIncludeBusiness(false); setNotice(null); setError(null); }}>
            <option value="">{t.bulk.choose}</option>
            {actions.map((a) => <option key={a} value={a}>{labels[a]}</option>)}
          </select>
        </div>
        {action === 'set_priority' && (
          <div className="field">
            <label htmlFor="bulk-priority">{t.bulk.priority}</label>
            <select id="bulk-priority" value={priority} onChange={(e) => setPriority(Number(e.target.value))}>
              {[5, 4, 3, 2, 1].map((p) => <option key={p} value={p}>{p} · {t.queue.priorities[p]}</option>)}
            </select>
          </div>
        )}
        {action === 'postpone' && (
          <div className="field">
            <label htmlFor="bulk-postpone">{t.bulk.postponeUntil}</label>
            <input id="bulk-postpone" type="datetime-local" value={postpone} onChange={(e) => setPostpone(e.target.value)} aria-describedby="bulk-postpone-hint" />
            <span className="hint" id="bulk-postpone-hint">{t.bulk.postponeHint}</span>
          </div>
        )}
        {offerBusiness && (
          <div className="field">
            <label className="check">
              <input type="checkbox" id="bulk-include-business" checked={includeBusiness} disabled={tracked !== null}
                onChange={(e) => { setIncludeBusiness(e.target.checked); setError(null); }} aria-describedby="bulk-include-business-hint" />
              <span>{t.exceptions.includeBusiness}</span>
            </label>
            <span className="hint" id="bulk-include-business-hint">
              {retryNeedsBusiness(target) ? t.exceptions.includeBusinessNeeded : t.exceptions.includeBusinessHint}
            </span>
          </div>
        )}
        <button type="button" disabled={!action || count.isPending || tracked !== null} onClick={() => count.mutate()}>{t.bulk.count}</button>
      </div>
      {error && <p className="form-error" role="alert">{error}</p>}
      <div role="status" aria-live="polite" className="live">
        {notice && <p className="notice ok">{notice}</p>}
        {running && (
          <p className="bulk-progress" data-bulk-status={running.status}>
            <progress aria-label={t.bulk.progress} max={Math.max(1, running.total)} value={running.done} />{' '}
            <span className="small">{t.bulk.progressText(formatCount(running.done, t.locale), formatCount(running.total, t.locale))}</span>
          </p>
        )}
      </div>
      {running && <button type="button" className="secondary" disabled={cancel.isPending || running.cancel_requested} onClick={() => cancel.mutate()}>{t.bulk.stop}</button>}
      <ConfirmDialog
        open={counted !== null}
        title={t.bulk.confirmTitle}
        confirmLabel={t.bulk.apply}
        danger={action === 'delete' || action === 'stop'}
        busy={start.isPending}
        onConfirm={() => (counted ? start.mutate() : setCounted(null))}
        onCancel={() => setCounted(null)}
      >
        <p data-bulk-count={counted ?? ''}>
          {counted === 0 ? t.bulk.nothing : target.kind === 'items' ? t.bulk.confirmItems(actionLabel, total) : t.bulk.confirmJobs(actionLabel, total)}
          {counted !== 0 && withBusiness && t.exceptions.withBusiness}
        </p>
      </ConfirmDialog>
    </section>
  );
}
