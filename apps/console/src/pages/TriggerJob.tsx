import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import type { BodyOf } from '@svc/client';
import { Field } from '../components/Field';
import { ErrorState, Loading } from '../components/States';
import { t } from '../i18n';
import { parseJsonObject } from '../lib/admin';
import { formErrors, type FormErrors } from '../lib/errors';
import { formOf, inputOf, type FieldValues, type FormField } from '../lib/input-form';
import { useSession } from '../session-context';

const NO_ERRORS: FormErrors = { fields: {}, general: null };

/**
 * An admin triggers a job: the process, its input through a form made from the process's
 * input_schema (lib/input-form.ts), the machine (or the automatic choice) with each machine's
 * status, the priority. The API checks the input against the schema; its messages land on the
 * fields. On success the job's page opens, which follows the job live.
 */
export function TriggerJobPage() {
  const { api } = useSession();
  const navigate = useNavigate();
  const [processId, setProcessId] = useState('');
  const [machineId, setMachineId] = useState('');
  const [priority, setPriority] = useState(3);
  const [values, setValues] = useState<FieldValues>({});
  const [json, setJson] = useState('');
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);

  // the same keys and shapes (the whole answer) as the jobs page's filters, whose cache they share
  const processes = useQuery({ queryKey: ['process-names'], queryFn: () => api.request('listWorkspaceProcesses', { query: { limit: 100 } }) });
  const machines = useQuery({ queryKey: ['machines', 'all'], queryFn: () => api.request('listWorkspaceMachines', { query: { limit: 100 } }) });
  const process = processes.data?.data.find((p) => p.id === processId);
  const form = process ? formOf(process.input_schema) : null;

  const submit = useMutation({
    mutationFn: (body: BodyOf<'triggerWorkspaceJob'>) => api.call('triggerWorkspaceJob', { body }),
    onSuccess: (job) => navigate(`/jobs/${job.id}`),
    onError: (err) => {
      const names = ['process_id', 'machine_id', 'priority', 'input_data', ...(form?.kind === 'fields' ? form.fields.map((f) => `input_data.${f.name}`) : [])];
      setErrors(formErrors(err, names, t.common.unexpectedError));
    },
  });

  function onSubmit(e: FormEvent) {
    e.preventDefault();
    if (!process || !form) return;
    let input: Record<string, unknown> | null;
    if (form.kind === 'fields') {
      const made = inputOf(form.fields, values);
      if ('problems' in made) {
        setErrors({ fields: Object.fromEntries(Object.entries(made.problems).map(([k, p]) => [`input_data.${k}`, t.trigger.problems[p]!])), general: null });
        return;
      }
      input = made.data;
    } else {
      const parsed = parseJsonObject(json);
      if (!parsed.ok) {
        setErrors({ fields: { input_data: parsed.reason === 'syntax' ? t.trigger.problems.json! : t.trigger.problems.notObject! }, general: null });
        return;
      }
      input = parsed.value;
    }
    setErrors(NO_ERRORS);
    submit.mutate({ process_id: process.id, machine_id: machineId || null, priority, ...(input === null ? {} : { input_data: input }) });
  }

  if (processes.isPending || machines.isPending) return <Loading />;
  if (processes.isError) return <ErrorState error={processes.error} onRetry={() => void processes.refetch()} />;
  if (machines.isError) return <ErrorState error={machines.error} onRetry={() => void machines.refetch()} />;

  return (
    <>
      <p><Link to="/jobs">{t.jobs.back}</Link></p>
      <h1>{t.trigger.title}</h1>
      <p className="muted">{t.trigger.intro}</p>
      <form className="card admin-form" onSubmit={onSubmit} noValidate aria-label={t.trigger.title}>
        <Field id="trigger-process" label={t.trigger.process} error={errors.fields.process_id}>
          <select id="trigger-process" value={processId} required onChange={(e) => { setProcessId(e.target.value); setValues({}); setJson(''); setErrors(NO_ERRORS); }}>
            <option value="">{t.trigger.chooseProcess}</option>
            {processes.data.data.filter((p) => p.is_active).map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </Field>
        <Field id="trigger-machine" label={t.trigger.machine} error={errors.fields.machine_id}>
          <select id="trigger-machine" value={machineId} onChange={(e) => setMachineId(e.target.value)}>
            <option value="">{t.trigger.automatic}</option>
            {machines.data.data.filter((m) => m.is_active).map((m) => (
              <option key={m.id} value={m.id} data-status={m.status}>{t.trigger.machineOption(m.name, t.machineStatus[m.status] ?? m.status)}</option>
            ))}
          </select>
        </Field>
        <Field id="trigger-priority" label={t.trigger.priority} error={errors.fields.priority}>
          <select id="trigger-priority" value={priority} onChange={(e) => setPriority(Number(e.target.value))}>
            {[1, 2, 3, 4, 5].map((p) => <option key={p} value={p}>{p} · {t.queue.priorities[p]}</option>)}
          </select>
        </Field>

        {form && (
          <fieldset>
            <legend>{t.trigger.input}</legend>
            {form.kind === 'fields'
              ? form.fields.map((f) => (
                <InputField key={f.name} field={f} value={values[f.name]} error={errors.fields[`input_data.${f.name}`]}
                  onChange={(v) => setValues((old) => ({ ...old, [f.name]: v }))} />
              ))
              : (
                <Field id="trigger-json" label={t.trigger.jsonInput} hint={process?.input_schema ? t.trigger.jsonInputHint : t.trigger.noSchema} error={errors.fields.input_data}>
                  <textarea id="trigger-json" rows={6} value={json} onChange={(e) => setJson(e.target.value)}
                    aria-describedby="trigger-json-hint" aria-invalid={errors.fields.input_data ? true : undefined} />
                </Field>
              )}
            {form.kind === 'fields' && errors.fields.input_data && <p className="field-error">{errors.fields.input_data}</p>}
          </fieldset>
        )}
        {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
        <div className="dialog-actions">
          <button type="submit" disabled={!process || submit.isPending}>{submit.isPending ? t.trigger.submitting : t.trigger.submit}</button>
        </div>
      </form>
    </>
  );
}

/** One property of the input, as the control its kind calls for. */
function InputField({ field, value, error, onChange }: { field: FormField; value: string | boolean | undefined; error?: string; onChange(v: string | boolean): void }) {
  const id = `input-${field.name}`;
  const label = field.required ? field.label : `${field.label} ${t.jobs.optional}`;
  const described = [field.description ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-describedby': described, 'aria-invalid': error ? true : undefined, required: field.required } as const;
  const text = typeof value === 'string' ? value : '';
  let control;
  switch (field.kind) {
    case 'boolean':
      return (
        <div className="field">
          <label className="check">
            <input type="checkbox" {...common} checked={value === true} onChange={(e) => onChange(e.target.checked)} />
            <span>{label}</span>
          </label>
          {field.description && <span className="hint" id={`${id}-hint`}>{field.description}</span>}
          {error && <span className="field-error" id={`${id}-error`}>{error}</span>}
        </div>
      );
    case 'select':
      control = (
        <select {...common} value={text} onChange={(e) => onChange(e.target.value)}>
          <option value="">{t.jobs.choose}</option>
          {field.options!.map((o) => <option key={o} value={o}>{displayOption(o)}</option>)}
        </select>
      );
      break;
    case 'json':
      control = <textarea {...common} rows={3} value={text} onChange={(e) => onChange(e.target.value)} />;
      break;
    case 'number':
    case 'integer':
      control = <input {...common} type="text" inputMode={field.kind === 'integer' ? 'numeric' : 'decimal'} value={text} onChange={(e) => onChange(e.target.value)} />;
      break;
    default: {
      const type = field.kind === 'date-time' ? 'datetime-local' : field.kind === 'text' ? 'text' : field.kind;
      control = <input {...common} type={type} maxLength={field.maxLength} value={text} onChange={(e) => onChange(e.target.value)} />;
    }
  }
  return <Field id={id} label={label} hint={field.description} error={error}>{control}</Field>;
}

/** An enum value as people read it: a string without its quotes, anything else as JSON. */
function displayOption(json: string): string {
  const v = JSON.parse(json) as unknown;
  return typeof v === 'string' ? v : json;
}
