import { useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AdminTable } from '../components/AdminTable';
import { ActiveCheck, FormActions, NO_ERRORS, useAdminForm } from '../components/AdminForm';
import { MachineField, ProcessField } from '../components/CatalogueFields';
import { DeactivateDialog, useDeactivation } from '../components/Deactivation';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import { formatCount } from '../lib/format';
import type { BodyOf } from '@svc/client';
import type { Trigger } from '../lib/api';
import { useIsAdmin, useSession } from '../session-context';
import { useCatalogueOptions } from './catalogue-options';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const FIELDS = ['queue_id', 'process_id', 'max_concurrent_jobs', 'min_items_to_start', 'machine_id', 'is_active'] as const;

/** Queue triggers: every member sees them; admins create, edit and deactivate. */
export function TriggersPage() {
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const options = useCatalogueOptions({ queues: true });
  const [editing, setEditing] = useState<Trigger | 'new' | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  // `?queue_id=` (the queues page links here so) shows one queue's triggers; an id that is not a UUID is ignored
  const [params] = useSearchParams();
  const queueId = UUID.test(params.get('queue_id') ?? '') ? params.get('queue_id')! : null;
  const triggers = useQuery({
    queryKey: queueId ? ['triggers', queueId] : ['triggers'],
    queryFn: () => api.request('listWorkspaceQueueTriggers', { query: queueId ? { limit: 100, queue_id: queueId } : { limit: 100 } }),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['triggers'] });

  const deactivation = useDeactivation<Trigger>((id) => api.request('deactivateQueueTrigger', { path: { id } }), () => { setNotice(t.triggers.deactivated); void refresh(); });

  return (
    <>
      <div className="title-row">
        <h1>{t.triggers.title}</h1>
        {isAdmin && editing === null && <button type="button" onClick={() => { setEditing('new'); setNotice(null); }}>{t.triggers.newTrigger}</button>}
      </div>
      <p className="muted">{t.triggers.intro}</p>
      {queueId && <p data-queue-filter="">{t.triggers.onlyQueue(options.queueName(queueId))} <Link to="/triggers">{t.triggers.showAll}</Link></p>}
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {editing !== null && (
        <TriggerForm
          key={editing === 'new' ? 'new' : editing.id}
          trigger={editing === 'new' ? null : editing}
          options={options}
          onCancel={() => setEditing(null)}
          onSaved={() => { setEditing(null); setNotice(t.triggers.saved); void refresh(); }}
        />
      )}

      <AdminTable
        query={triggers}
        caption={t.triggers.caption}
        className="triggers"
        empty={t.triggers.empty}
        head={<>
          <th scope="col">{t.admin.queue}</th>
          <th scope="col">{t.admin.process}</th>
          <th scope="col">{t.admin.machine}</th>
          <th scope="col" className="num">{t.triggers.maxConcurrent}</th>
          <th scope="col" className="num">{t.triggers.minItems}</th>
          <th scope="col">{t.admin.status}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(tr) => {
          const queue = options.queueName(tr.queue_id);
          return (
            <tr key={tr.id} data-trigger={queue}>
              <th scope="row">{queue}{tr.is_queue_default && <><br /><span className="muted small">{t.triggers.isDefault}</span></>}</th>
              <td>{options.processName(tr.process_id)}</td>
              <td>{options.machineName(tr.machine_id) ?? <span className="muted">{t.admin.automaticMachine}</span>}</td>
              <td className="num">{tr.max_concurrent_jobs}</td>
              <td className="num">{formatCount(tr.min_items_to_start, t.locale)}</td>
              <td><span className={`badge ${tr.is_active ? 'badge-completed' : ''}`}>{tr.is_active ? t.admin.active : t.admin.inactive}</span></td>
              <td><div className="row-actions">
                {isAdmin && <button type="button" className="secondary" aria-label={t.triggers.editLabel(queue)} onClick={() => { setEditing(tr); setNotice(null); }}>{t.admin.edit}</button>}
                {isAdmin && tr.is_active && (
                  <button type="button" className="danger" aria-label={t.triggers.deactivateLabel(queue)}
                    onClick={() => deactivation.ask(tr)}>{t.admin.deactivate}</button>
                )}
              </div></td>
            </tr>
          );
        }}
      />

      <DeactivateDialog deactivation={deactivation} title={(tr) => t.triggers.deactivateTitle(options.queueName(tr.queue_id))}>
        <p>{t.triggers.deactivateBody}</p>
      </DeactivateDialog>
    </>
  );
}

function TriggerForm({ trigger, options, onCancel, onSaved }: {
  trigger: Trigger | null;
  options: ReturnType<typeof useCatalogueOptions>;
  onCancel(): void;
  onSaved(tr: Trigger): void;
}) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    queue_id: trigger?.queue_id ?? '',
    process_id: trigger?.process_id ?? '',
    machine_id: trigger?.machine_id ?? '',
    max_concurrent_jobs: String(trigger?.max_concurrent_jobs ?? 1),
    min_items_to_start: String(trigger?.min_items_to_start ?? 1),
    is_active: trigger?.is_active ?? true,
  }));

  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => trigger
      ? api.request('updateQueueTrigger', { path: { id: trigger.id }, body: body as BodyOf<'updateQueueTrigger'> })
      : api.request('createQueueTrigger', { body: { type: 'queue', queue_id: form.queue_id, ...body } as BodyOf<'createQueueTrigger'> }),
    onSuccess: ({ data }) => onSaved(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    // a number field left empty or with a fraction goes as typed: the API's message says what it needs
    const num = (v: string) => (/^\d+$/.test(v.trim()) ? Number(v) : v);
    setErrors(NO_ERRORS);
    save.mutate({
      process_id: form.process_id,
      machine_id: form.machine_id || null,
      max_concurrent_jobs: num(form.max_concurrent_jobs),
      min_items_to_start: num(form.min_items_to_start),
      is_active: form.is_active,
    });
  }

  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="trigger-form-title">
      <h2 id="trigger-form-title">{trigger ? t.triggers.editTitle : t.triggers.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      {options.failed && <p className="form-error" role="alert">{t.admin.cannotLoadOptions}</p>}
      <div className="form-grid">
        <Field id="queue_id" label={t.admin.queue} hint={trigger ? t.triggers.queueFixed : undefined} error={fe.queue_id}>
          <select {...input('queue_id', !!trigger)} value={form.queue_id} onChange={set('queue_id')} disabled={!!trigger} autoFocus>
            <option value="">{t.admin.choose}</option>
            {options.queues.map((q) => <option key={q.id} value={q.id}>{q.name}</option>)}
          </select>
        </Field>
        <ProcessField processes={options.processes} value={form.process_id} error={fe.process_id} describedBy={input('process_id')['aria-describedby']} onChange={set('process_id')} />
        <MachineField machines={options.machines} value={form.machine_id} error={fe.machine_id} describedBy={input('machine_id')['aria-describedby']} onChange={set('machine_id')} />
        <Field id="max_concurrent_jobs" label={t.triggers.maxConcurrent} hint={t.triggers.maxConcurrentHint} error={fe.max_concurrent_jobs}>
          <input {...input('max_concurrent_jobs', true)} type="number" inputMode="numeric" min={1} max={100} value={form.max_concurrent_jobs} onChange={set('max_concurrent_jobs')} />
        </Field>
        <Field id="min_items_to_start" label={t.triggers.minItems} hint={t.triggers.minItemsHint} error={fe.min_items_to_start}>
          <input {...input('min_items_to_start', true)} type="number" inputMode="numeric" min={1} max={10000} value={form.min_items_to_start} onChange={set('min_items_to_start')} />
        </Field>
      </div>
      <ActiveCheck checked={form.is_active} label={t.triggers.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
