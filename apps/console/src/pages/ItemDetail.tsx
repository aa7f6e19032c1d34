import { useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import { Field } from '../components/Field';
import { ExceptionBadge, StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { formErrors, type FormErrors } from '../lib/errors';
import { failureKind } from '../lib/exceptions';
import type { QueueItem } from '../lib/api';
import { useSession } from '../session-context';
import { useFocusOnMount } from '../components/focus';

/** One item: every field the API gives, and the review an admin may do on it. */
export function ItemDetail({ item, canAct, onClose, onChanged }: {
  item: QueueItem;
  canAct: boolean;
  onClose(): void;
  onChanged(row: QueueItem, message: string): void;
}) {
  const { api } = useSession();
  const heading = useFocusOnMount<HTMLHeadingElement>();
  const [reason, setReason] = useState('');
  const [errors, setErrors] = useState<FormErrors>({ fields: {}, general: null });

  const decide = useMutation({
    mutationFn: (approve: boolean) => api.request(approve ? 'approveQueueItem' : 'rejectQueueItem', {
      path: { queue_id: item.queue_id, item_id: item.id },
      body: approve ? {} : (reason.trim() ? { reason: reason.trim() } : {}),
    }),
    onSuccess: ({ data }, approve) => { setErrors({ fields: {}, general: null }); onChanged(data, approve ? t.item.approved : t.item.rejected); },
    onError: (err) => setErrors(formErrors(err, ['reason', 'comment'], t.common.unexpectedError)),
  });
  const redrive = useMutation({
    mutationFn: () => api.request('redriveQueueItems', { path: { queue_id: item.queue_id }, body: { item_ids: [item.id] } }),
    onSuccess: () => onChanged({ ...item, status: 'new', retry_count: 0 }, t.queue.redriven(1)),
    onError: (err) => setErrors(formErrors(err, [], t.common.unexpectedError)),
  });

  function reject(e: FormEvent) {
    e.preventDefault();
    decide.mutate(false);
  }

  const ref = item.reference ?? t.queue.noReference;
  return (
    <section className="detail card wide" aria-labelledby="item-title">
      <div className="title-row">
        <h2 id="item-title" ref={heading} tabIndex={-1}>{t.item.title(ref)} <StatusBadge kind="item" status={item.status} /></h2>
        <button type="button" className="secondary" onClick={onClose}>{t.common.close}</button>
      </div>
      <dl className="props">
        <div><dt>{t.queue.priority}</dt><dd>{t.queue.priorities[item.priority] ?? item.priority}</dd></div>
        <div><dt>{t.item.retries}</dt><dd>{item.retry_count}</dd></div>
        {item.exception_type && (
          // a failed item's kind; another keeps the kind of its last failure (retried, then completed)
          <div><dt>{failureKind(item) ? t.exceptions.detail : t.exceptions.lastFailure}</dt><dd><ExceptionBadge type={item.exception_type} /></dd></div>
        )}
        <div><dt>{t.queue.created}</dt><dd><Time iso={item.created_at} /></dd></div>
        <div><dt>{t.item.deadline}</dt><dd><Time iso={item.deadline} /></dd></div>
        <div><dt>{t.item.postpone}</dt><dd><Time iso={item.postpone} /></dd></div>
        <div><dt>{t.item.processedAt}</dt><dd><Time iso={item.processed_at} /></dd></div>
        <div><dt>{t.item.reviewer}</dt><dd>{item.reviewed_by ?? t.common.none}</dd></div>
        <div><dt>{t.item.reviewedAt}</dt><dd><Time iso={item.reviewed_at} /></dd></div>
      </dl>
      {item.error_message && <><h3>{t.item.error}</h3><p className="error-text">{item.error_message}</p></>}
      <h3>{t.item.data}</h3>
      <pre tabIndex={0} role="region" aria-label={t.item.data}>{JSON.stringify(item.data, null, 2)}</pre>
      <h3>{t.item.result}</h3>
      {item.result ? <pre tabIndex={0} role="region" aria-label={t.item.result}>{JSON.stringify(item.result, null, 2)}</pre> : <p className="muted">{t.common.none}</p>}

      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      {canAct && item.status === 'pending_review' && (
        <div className="review">
          <h3>{t.item.reviewTitle}</h3>
          <button type="button" disabled={decide.isPending} onClick={() => decide.mutate(true)}>{t.item.approve}</button>
          <form onSubmit={reject} className="reject">
            <Field id="reject-reason" label={t.item.reason} hint={t.item.reasonHint} error={errors.fields.reason}>
              <textarea id="reject-reason" value={reason} maxLength={1000} rows={2} onChange={(e) => setReason(e.target.value)}
                aria-invalid={!!errors.fields.reason} aria-describedby={errors.fields.reason ? 'reject-reason-hint reject-reason-error' : 'reject-reason-hint'} />
            </Field>
            <button type="submit" className="danger" disabled={decide.isPending}>{t.item.reject}</button>
          </form>
        </div>
      )}
      {canAct && item.status === 'dead_letter' && (
        <button type="button" disabled={redrive.isPending} onClick={() => redrive.mutate()}>{t.item.redrive}</button>
      )}
    </section>
  );
}
