import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AdminTable } from '../components/AdminTable';
import { ActiveCheck, FormActions, NO_ERRORS, useAdminForm } from '../components/AdminForm';
import { Dependants } from '../components/Dependants';
import { DeactivateDialog, useDeactivation } from '../components/Deactivation';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import { decimalOrText, numberOrText } from '../lib/catalogue';
import { formatCount } from '../lib/format';
import type { BodyOf } from '@svc/client';
import type { Queue } from '../lib/api';
import { useIsAdmin, useSession } from '../session-context';
import { useCatalogueOptions } from './catalogue-options';

const FIELDS = [
  'name', 'description', 'max_retries', 'consumer_process_id', 'max_consumers', 'is_paused', 'is_active',
  'retention_completed_days', 'retention_failed_days', 'retention_action', 'unique_references',
] as const;

/**
 * The queues' settings: every member sees them, with links to each queue's items and triggers;
 * admins create, edit every field and deactivate. (The items are the queue's own page.)
 */
export function QueuesPage() {
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const options = useCatalogueOptions();
  const [editing, setEditing] = useState<Queue | 'new' | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const queues = useQuery({ queryKey: ['queues', 'settings'], queryFn: () => api.request('listWorkspaceQueues', { query: { limit: 100 } }) });
  const triggers = useQuery({ queryKey: ['triggers'], queryFn: () => api.request('listWorkspaceQueueTriggers', { query: { limit: 100 } }) });
  const refresh = () => Promise.all([
    queryClient.invalidateQueries({ queryKey: ['queues'] }),
    queryClient.invalidateQueries({ queryKey: ['options', 'queues'] }),
    // a queue saved with a consumer process gets its default trigger
    queryClient.invalidateQueries({ queryKey: ['triggers'] }),
  ]);
  const deactivation = useDeactivation<Queue>((id) => api.request('deactivateQueue', { path: { id } }), (q) => { setNotice(t.queues.deactivated(q.name)); void refresh(); });
  const triggerCount = (queueId: string) => triggers.data?.data.filter((tr) => tr.queue_id === queueId && tr.is_active).length ?? 0;

  return (
    <>
      <div className="title-row">
        <h1>{t.queues.title}</h1>
        {isAdmin && editing === null && <button type="button" onClick={() => { setEditing('new'); setNotice(null); }}>{t.queues.newQueue}</button>}
      </div>
      <p className="muted">{t.queues.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {editing !== null && (
        <QueueForm key={editing === 'new' ? 'new' : editing.id} queue={editing === 'new' ? null : editing} options={options}
          onCancel={() => setEditing(null)}
          onSaved={(q) => { setEditing(null); setNotice(t.queues.saved(q.name)); void refresh(); }} />
      )}

      <AdminTable
        query={queues}
        caption={t.queues.caption}
        className="queues"
        empty={t.queues.empty}
        head={<>
          <th scope="col">{t.admin.name}</th>
          <th scope="col">{t.queues.consumer}</th>
          <th scope="col" className="num">{t.queues.maxConsumers}</th>
          <th scope="col" className="num">{t.queues.maxRetries}</th>
          <th scope="col" className="num">{t.queues.items}</th>
          <th scope="col">{t.adminNav.triggers}</th>
          <th scope="col">{t.admin.status}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(q) => (
          <tr key={q.id} data-queue={q.name}>
            <th scope="row">
              <Link to={`/queues/${q.id}`} aria-label={t.queues.itemsLink(q.name)}>{q.name}</Link>
              {q.description && <span className="muted small block">{q.description}</span>}
            </th>
            <td>{q.consumer_process_id ? options.processName(q.consumer_process_id) : <span className="muted">{t.queues.noConsumer}</span>}</td>
            <td className="num">{q.max_consumers}</td>
            <td className="num">{q.max_retries}</td>
            <td className="num">{formatCount(q.item_counts.total, t.locale)}</td>
            <td><Link to={`/triggers?queue_id=${q.id}`} aria-label={t.queues.triggersLabel(triggerCount(q.id), q.name)}>{t.queues.triggersLink(triggerCount(q.id))}</Link></td>
            <td>
              <span className={`badge ${q.is_active ? 'badge-completed' : ''}`}>{q.is_active ? t.admin.active : t.admin.inactive}</span>
              {q.is_paused && <> <span className="badge" data-paused="">{t.queues.paused}</span></>}
            </td>
            <td><div className="row-actions">
              {isAdmin && <button type="button" className="secondary" aria-label={t.queues.editLabel(q.name)} onClick={() => { setEditing(q); setNotice(null); }}>{t.admin.edit}</button>}
              {isAdmin && q.is_active && <button type="button" className="danger" aria-label={t.queues.deactivateLabel(q.name)} onClick={() => deactivation.ask(q)}>{t.admin.deactivate}</button>}
            </div></td>
          </tr>
        )}
      />

      <DeactivateDialog deactivation={deactivation} title={(q) => t.queues.deactivateTitle(q.name)}>
        <p>{t.queues.deactivateBody}</p>
        {deactivation.pending && (
          <Dependants resource="queue" record={deactivation.pending}
            openItems={deactivation.pending.item_counts.new + deactivation.pending.item_counts.in_progress + deactivation.pending.item_counts.pending_review} />
        )}
      </DeactivateDialog>
    </>
  );
}

function QueueForm({ queue, options, onCancel, onSaved }: {
  queue: Queue | null;
  options: ReturnType<typeof useCatalogueOptions>;
  onCancel(): void;
  onSaved(q: Queue): void;
}) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    name: queue?.name ?? '',
    description: queue?.description ?? '',
    max_retries: String(queue?.max_retries ?? 3),
    consumer_process_id: queue?.consumer_process_id ?? '',
    max_consumers: String(queue?.max_consumers ?? 1),
    is_paused: queue?.is_paused ?? false,
    is_active: queue?.is_active ?? true,
    retention_completed_days: String(queue?.retention_completed_days ?? 30),
    retention_failed_days: String(queue?.retention_failed_days ?? 90),
    retention_action: queue?.retention_action ?? 'delete',
    unique_references: queue?.unique_references ?? false,
  }));
  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => queue
      ? api.request('updateQueue', { path: { id: queue.id }, body: body as BodyOf<'updateQueue'> })
      : api.request('createQueue', { body: body as BodyOf<'createQueue'> }),
    onSuccess: ({ data }) => onSaved(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    save.mutate({
      name: form.name.trim(),
      description: form.description.trim() || null,
      max_retries: numberOrText(form.max_retries),
      consumer_process_id: form.consumer_process_id || null,
      max_consumers: numberOrText(form.max_consumers),
      is_paused: form.is_paused,
      is_active: form.is_active,
      retention_completed_days: decimalOrText(form.retention_completed_days),
      retention_failed_days: decimalOrText(form.retention_failed_days),
      retention_action: form.retention_action,
      unique_references: form.unique_references,
    });
  }
  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="queue-form-title">
      <h2 id="queue-form-title">{queue ? t.queues.editTitle(queue.name) : t.queues.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      {options.failed && <p className="form-error" role="alert">{t.admin.cannotLoadOptions}</p>}
      <div className="form-grid">
        <Field id="name" label={t.admin.name} hint={t.catalogue.nameHint} error={fe.name}>
          <input {...input('name', true)} value={form.name} maxLength={100} onChange={set('name')} autoFocus />
        </Field>
        <Field id="description" label={t.catalogue.description} error={fe.description}>
          <input {...input('description')} value={form.description} maxLength={2000} onChange={set('description')} />
        </Field>
        <Field id="consumer_process_id" label={t.queues.consumer} error={fe.consumer_process_id}>
          <select {...input('consumer_process_id')} value={form.consumer_process_id} onChange={set('consumer_process_id')}>
            <option value="">{t.queues.noConsumer}</option>
            {options.processes.filter((p) => p.is_active || p.id === form.consumer_process_id).map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </Field>
        <Field id="max_consumers" label={t.queues.maxConsumers} hint={t.queues.maxConsumersHint} error={fe.max_consumers}>
          <input {...input('max_consumers', true)} type="number" inputMode="numeric" value={form.max_consumers} onChange={set('max_consumers')} />
        </Field>
        <Field id="max_retries" label={t.queues.maxRetries} hint={t.queues.maxRetriesHint} error={fe.max_retries}>
          <input {...input('max_retries', true)} type="number" inputMode="numeric" value={form.max_retries} onChange={set('max_retries')} />
        </Field>
      </div>
      <fieldset className="form-grid">
        <legend>{t.queues.retention}</legend>
        <Field id="retention_completed_days" label={t.queues.retentionCompletedDays} hint={t.queues.retentionDaysHint} error={fe.retention_completed_days}>
          <input {...input('retention_completed_days', true)} inputMode="decimal" value={form.retention_completed_days} onChange={set('retention_completed_days')} />
        </Field>
        <Field id="retention_failed_days" label={t.queues.retentionFailedDays} hint={t.queues.retentionDaysHint} error={fe.retention_failed_days}>
          <input {...input('retention_failed_days', true)} inputMode="decimal" value={form.retention_failed_days} onChange={set('retention_failed_days')} />
        </Field>
        <Field id="retention_action" label={t.queues.retentionAction} hint={t.queues.retentionActionHint} error={fe.retention_action}>
          <select {...input('retention_action')} value={form.retention_action} onChange={set('retention_action')}>
            <option value="delete">{t.queues.retentionDelete}</option>
            <option value="archive">{t.queues.retentionArchive}</option>
          </select>
        </Field>
      </fieldset>
      <ActiveCheck checked={form.unique_references} label={t.queues.uniqueReferences}
        onChange={(on) => setForm((f) => ({ ...f, unique_references: on }))} />
      <ActiveCheck checked={form.is_paused} label={t.queues.isPaused} onChange={(on) => setForm((f) => ({ ...f, is_paused: on }))} />
      <ActiveCheck checked={form.is_active} label={t.queues.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
