import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AdminTable } from '../components/AdminTable';
import { ActiveCheck, FormActions, NO_ERRORS, useAdminForm } from '../components/AdminForm';
import { MachineField, ProcessField } from '../components/CatalogueFields';
import { DeactivateDialog, useDeactivation } from '../components/Deactivation';
import { Field } from '../components/Field';
import { SchedulePreview } from '../components/SchedulePreview';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { browserTimeZone, parseJsonObject, topLevelErrors } from '../lib/admin';
import type { BodyOf } from '@svc/client';
import { MISSED_RUNS, type Schedule } from '../lib/api';
import { useIsAdmin, useSession } from '../session-context';
import { useCatalogueOptions } from './catalogue-options';

const FIELDS = ['name', 'description', 'process_id', 'cron', 'timezone', 'machine_id', 'input_data', 'priority', 'missed_runs', 'is_active'] as const;

/** Schedules: every member sees them and their next runs; admins create, edit and deactivate. */
export function SchedulesPage() {
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const options = useCatalogueOptions();
  const [editing, setEditing] = useState<Schedule | 'new' | null>(null);
  const [previewing, setPreviewing] = useState<Schedule | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const schedules = useQuery({ queryKey: ['schedules'], queryFn: () => api.request('listWorkspaceSchedules', { query: { limit: 100 } }) });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['schedules'] });

  const deactivation = useDeactivation<Schedule>((id) => api.request('deactivateSchedule', { path: { id } }), (data) => {
    setNotice(t.schedules.deactivated(data.name));
    if (previewing?.id === data.id) setPreviewing(data);
    void refresh();
  });

  return (
    <>
      <div className="title-row">
        <h1>{t.schedules.title}</h1>
        {isAdmin && editing === null && <button type="button" onClick={() => { setEditing('new'); setNotice(null); }}>{t.schedules.newSchedule}</button>}
      </div>
      <p className="muted">{t.schedules.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {editing !== null && (
        <ScheduleForm
          key={editing === 'new' ? 'new' : editing.id}
          schedule={editing === 'new' ? null : editing}
          options={options}
          onCancel={() => setEditing(null)}
          onSaved={(saved) => { setEditing(null); setNotice(t.schedules.saved(saved.name)); setPreviewing(saved); void refresh(); }}
        />
      )}
      {previewing && (
        <div className="card wide">
          <SchedulePreview schedule={previewing} />
          <button type="button" className="secondary" onClick={() => setPreviewing(null)}>{t.common.close}</button>
        </div>
      )}

      <AdminTable
        query={schedules}
        caption={t.schedules.caption}
        className="schedules"
        empty={t.schedules.empty}
        head={<>
          <th scope="col">{t.admin.name}</th>
          <th scope="col">{t.admin.process}</th>
          <th scope="col">{t.schedules.cron}</th>
          <th scope="col">{t.admin.machine}</th>
          <th scope="col">{t.schedules.nextRun}</th>
          <th scope="col">{t.schedules.lastRun}</th>
          <th scope="col">{t.admin.status}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(s) => (
          <tr key={s.id} data-schedule={s.name}>
            <th scope="row">{s.name}{s.last_error && <p className="error-text small">{t.schedules.lastError}: {s.last_error}</p>}</th>
            <td>{options.processName(s.process_id)}</td>
            <td><code>{s.cron}</code><br /><span className="muted small">{s.timezone}</span></td>
            <td>{options.machineName(s.machine_id) ?? <span className="muted">{t.admin.automaticMachine}</span>}</td>
            <td><Time iso={s.next_run_at} /></td>
            <td><Time iso={s.last_run_at} /></td>
            <td><span className={`badge ${s.is_active ? 'badge-completed' : ''}`}>{s.is_active ? t.admin.active : t.admin.inactive}</span></td>
            <td><div className="row-actions">
              <button type="button" className="secondary" aria-label={t.schedules.previewLabel(s.name)} onClick={() => setPreviewing(s)}>{t.schedules.preview}</button>
              {isAdmin && <button type="button" className="secondary" aria-label={t.schedules.editLabel(s.name)} onClick={() => { setEditing(s); setNotice(null); }}>{t.admin.edit}</button>}
              {isAdmin && s.is_active && (
                <button type="button" className="danger" aria-label={t.schedules.deactivateLabel(s.name)}
                  onClick={() => deactivation.ask(s)}>{t.admin.deactivate}</button>
              )}
            </div></td>
          </tr>
        )}
      />

      <DeactivateDialog deactivation={deactivation} title={(s) => t.schedules.deactivateTitle(s.name)}>
        <p>{t.schedules.deactivateBody}</p>
      </DeactivateDialog>
    </>
  );
}

function ScheduleForm({ schedule, options, onCancel, onSaved }: {
  schedule: Schedule | null;
  options: ReturnType<typeof useCatalogueOptions>;
  onCancel(): void;
  onSaved(s: Schedule): void;
}) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    name: schedule?.name ?? '',
    description: schedule?.description ?? '',
    process_id: schedule?.process_id ?? '',
    cron: schedule?.cron ?? '',
    timezone: schedule?.timezone ?? browserTimeZone(),
    machine_id: schedule?.machine_id ?? '',
    input_data: schedule?.input_data ? JSON.stringify(schedule.input_data, null, 2) : '',
    priority: String(schedule?.priority ?? 3),
    missed_runs: schedule?.missed_runs ?? 'skip',
    is_active: schedule?.is_active ?? true,
  }));

  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => schedule
      ? api.request('updateSchedule', { path: { id: schedule.id }, body: body as BodyOf<'updateSchedule'> })
      : api.request('createSchedule', { body: body as BodyOf<'createSchedule'> }),
    onSuccess: ({ data }) => onSaved(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    const input = parseJsonObject(form.input_data);
    if (!input.ok) {
      // a JSON typing mistake is caught here: the API would only see a string
      setErrors({ fields: { input_data: input.reason === 'syntax' ? t.schedules.badJson : t.schedules.notObject }, general: null });
      return;
    }
    setErrors(NO_ERRORS);
    save.mutate({
      name: form.name.trim(),
      description: form.description.trim() || null,
      process_id: form.process_id,
      cron: form.cron.trim(),
      timezone: form.timezone.trim(),
      machine_id: form.machine_id || null,
      input_data: input.value,
      priority: Number(form.priority),
      missed_runs: form.missed_runs,
      is_active: form.is_active,
    });
  }

  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="schedule-form-title">
      <h2 id="schedule-form-title">{schedule ? t.schedules.editTitle(schedule.name) : t.schedules.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      {options.failed && <p className="form-error" role="alert">{t.admin.cannotLoadOptions}</p>}
      <div className="form-grid">
        <Field id="name" label={t.admin.name} error={fe.name}>
          <input {...input('name')} value={form.name} maxLength={255} onChange={set('name')} autoFocus />
        </Field>
        <ProcessField processes={options.processes} value={form.process_id} error={fe.process_id} describedBy={input('process_id')['aria-describedby']} onChange={set('process_id')} />
        <Field id="cron" label={t.schedules.cron} hint={t.schedules.cronHint} error={fe.cron}>
          <input {...input('cron', true)} value={form.cron} maxLength={120} spellCheck={false} onChange={set('cron')} />
        </Field>
        <Field id="timezone" label={t.schedules.timezone} hint={t.schedules.timezoneHint} error={fe.timezone}>
          <input {...input('timezone', true)} value={form.timezone} maxLength={64} spellCheck={false} onChange={set('timezone')} />
        </Field>
        <MachineField machines={options.machines} value={form.machine_id} error={fe.machine_id} describedBy={input('machine_id')['aria-describedby']} onChange={set('machine_id')} />
        <Field id="priority" label={t.schedules.priority} error={fe.priority}>
          <select {...input('priority')} value={form.priority} onChange={set('priority')}>
            {[1, 2, 3, 4, 5].map((p) => <option key={p} value={p}>{p} · {t.queue.priorities[p]}</option>)}
          </select>
        </Field>
        <Field id="missed_runs" label={t.schedules.missedRuns} error={fe.missed_runs}>
          <select {...input('missed_runs')} value={form.missed_runs} onChange={set('missed_runs')}>
            {MISSED_RUNS.map((m) => <option key={m} value={m}>{t.schedules.missedRunsNames[m]}</option>)}
          </select>
        </Field>
        <Field id="description" label={t.schedules.description} error={fe.description}>
          <input {...input('description')} value={form.description} maxLength={1000} onChange={set('description')} />
        </Field>
      </div>
      <Field id="input_data" label={t.schedules.inputData} hint={t.schedules.inputDataHint} error={fe.input_data}>
        <textarea {...input('input_data', true)} rows={4} spellCheck={false} value={form.input_data} onChange={set('input_data')} />
      </Field>
      <ActiveCheck checked={form.is_active} label={t.schedules.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      {fe.is_active && <span className="field-error">{fe.is_active}</span>}
      {!schedule && <p className="muted small">{t.schedules.previewAfterSave}</p>}
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
