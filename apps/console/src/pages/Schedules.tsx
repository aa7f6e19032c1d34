import { useState } from 'react';
import { CataloguePage, statusColumn } from '../components/CataloguePage';
import { CheckField, MachineField, OptionsFailed, ProcessField, TextField } from '../components/CatalogueFields';
import { Field } from '../components/Field';
import { SchedulePreview } from '../components/SchedulePreview';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { browserTimeZone } from '../lib/admin';
import { MISSED_RUNS, type Schedule } from '../lib/api';
import type { Catalogue, FieldsProps } from '../lib/catalogue-page';
import { formReader } from '../lib/form-reading';
import { useCatalogueOptions, type CatalogueOptions } from './catalogue-options';

type ScheduleValues = ReturnType<typeof initial>;

const initial = (s: Schedule | null) => ({
  name: s?.name ?? '',
  description: s?.description ?? '',
  process_id: s?.process_id ?? '',
  cron: s?.cron ?? '',
  timezone: s?.timezone ?? browserTimeZone(),
  machine_id: s?.machine_id ?? '',
  input_data: s?.input_data ? JSON.stringify(s.input_data, null, 2) : '',
  priority: String(s?.priority ?? 3),
  missed_runs: s?.missed_runs ?? 'skip',
  is_active: s?.is_active ?? true,
});

function body(v: ScheduleValues) {
  const read = formReader();
  return read.body({
    name: v.name.trim(),
    description: v.description.trim() || null,
    process_id: v.process_id,
    cron: v.cron.trim(),
    timezone: v.timezone.trim(),
    machine_id: v.machine_id || null,
    // a JSON typing mistake is caught here: the API would only see a string
    input_data: read.jsonObject('input_data', v.input_data, t.schedules),
    priority: Number(v.priority),
    missed_runs: v.missed_runs,
    is_active: v.is_active,
  });
}

/** Schedules: every member sees them and their next runs; admins create, edit and deactivate. */
export function SchedulesPage() {
  const options = useCatalogueOptions();
  const [previewing, setPreviewing] = useState<Schedule | null>(null);
  const catalogue: Catalogue<Schedule, ScheduleValues, 'createSchedule', 'updateSchedule'> = {
    queryKey: ['schedules'],
    refreshes: [['schedules']],
    list: (api) => api.request('listWorkspaceSchedules', { query: { limit: 100 } }),
    create: (api, body) => api.request('createSchedule', { body }),
    update: (api, id, body) => api.request('updateSchedule', { path: { id }, body }),
    deactivate: (api, id) => api.request('deactivateSchedule', { path: { id } }),
    texts: { ...t.schedules, newRecord: t.schedules.newSchedule },
    label: (s) => s.name,
    className: 'schedules',
    rowData: (s) => ({ 'data-schedule': s.name }),
    columns: [
      { header: t.admin.name, cell: (s) => <>{s.name}{s.last_error && <p className="error-text small">{t.schedules.lastError}: {s.last_error}</p>}</> },
      { header: t.admin.process, cell: (s) => options.processName(s.process_id) },
      { header: t.schedules.cron, cell: (s) => <><code>{s.cron}</code><br /><span className="muted small">{s.timezone}</span></> },
      { header: t.admin.machine, cell: (s) => options.machineName(s.machine_id) ?? <span className="muted">{t.admin.automaticMachine}</span> },
      { header: t.schedules.nextRun, cell: (s) => <Time iso={s.next_run_at} /> },
      { header: t.schedules.lastRun, cell: (s) => <Time iso={s.last_run_at} /> },
      statusColumn(),
    ],
    actions: (s) => <button type="button" className="secondary" aria-label={t.schedules.previewLabel(s.name)} onClick={() => setPreviewing(s)}>{t.schedules.preview}</button>,
    form: { id: 'schedule', fields: Object.keys(initial(null)), initial, create: body, update: body, controls: (props) => <ScheduleControls {...props} options={options} /> },
    onSaved: (s) => { setPreviewing(s); return t.schedules.saved(s.name); },
    onDeactivated: (s) => { if (previewing?.id === s.id) setPreviewing(s); },
    parts: {
      belowForm: previewing && (
        <div className="card wide">
          <SchedulePreview schedule={previewing} />
          <button type="button" className="secondary" onClick={() => setPreviewing(null)}>{t.common.close}</button>
        </div>
      ),
    },
  };
  return <CataloguePage catalogue={catalogue} />;
}

function ScheduleControls({ record, form, options }: FieldsProps<Schedule, ScheduleValues> & { options: CatalogueOptions }) {
  const { form: values, set, input, errors: { fields: fe } } = form;
  return (
    <>
      <OptionsFailed failed={options.failed} />
      <div className="form-grid">
        <Field id="name" label={t.admin.name} error={fe.name}>
          <input {...input('name')} value={values.name} maxLength={255} onChange={set('name')} autoFocus />
        </Field>
        <ProcessField processes={options.processes} value={values.process_id} error={fe.process_id} describedBy={input('process_id')['aria-describedby']} onChange={set('process_id')} />
        <TextField form={form} id="cron" label={t.schedules.cron} hint={t.schedules.cronHint} maxLength={120} spellCheck={false} />
        <TextField form={form} id="timezone" label={t.schedules.timezone} hint={t.schedules.timezoneHint} maxLength={64} spellCheck={false} />
        <MachineField machines={options.machines} value={values.machine_id} error={fe.machine_id} describedBy={input('machine_id')['aria-describedby']} onChange={set('machine_id')} />
        <Field id="priority" label={t.schedules.priority} error={fe.priority}>
          <select {...input('priority')} value={values.priority} onChange={set('priority')}>
            {[1, 2, 3, 4, 5].map((p) => <option key={p} value={p}>{p} · {t.queue.priorities[p]}</option>)}
          </select>
        </Field>
        <Field id="missed_runs" label={t.schedules.missedRuns} error={fe.missed_runs}>
          <select {...input('missed_runs')} value={values.missed_runs} onChange={set('missed_runs')}>
            {MISSED_RUNS.map((m) => <option key={m} value={m}>{t.schedules.missedRunsNames[m]}</option>)}
          </select>
        </Field>
        <TextField form={form} id="description" label={t.schedules.description} maxLength={1000} />
      </div>
      <Field id="input_data" label={t.schedules.inputData} hint={t.schedules.inputDataHint} error={fe.input_data}>
        <textarea {...input('input_data', true)} rows={4} spellCheck={false} value={values.input_data} onChange={set('input_data')} />
      </Field>
      <CheckField form={form} id="is_active" label={t.schedules.isActive} />
      {fe.is_active && <span className="field-error">{fe.is_active}</span>}
      {!record && <p className="muted small">{t.schedules.previewAfterSave}</p>}
    </>
  );
}
