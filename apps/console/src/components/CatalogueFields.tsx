import { t } from '../i18n';
import { ENVIRONMENTS, type Environment } from '../lib/api';
import { ActiveCheck, type AdminFormState } from './AdminForm';
import { Field } from './Field';

interface Named { id: string; name: string }

interface SelectProps {
  value: string;
  error?: string;
  describedBy?: string;
  onChange(e: { target: { value: string } }): void;
}

/** The process a schedule or trigger starts: required, chosen from the workspace's processes. */
export function ProcessField({ processes, value, error, describedBy, onChange }: SelectProps & { processes: Named[] }) {
  return (
    <Field id="process_id" label={t.admin.process} error={error}>
      <select id="process_id" aria-invalid={!!error} aria-describedby={describedBy} value={value} onChange={onChange}>
        <option value="">{t.admin.choose}</option>
        {processes.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
      </select>
    </Field>
  );
}

/** The machine its jobs run on, or none: the dispatcher picks one. */
export function MachineField({ machines, value, error, describedBy, onChange }: SelectProps & { machines: Named[] }) {
  return (
    <Field id="machine_id" label={t.admin.machine} error={error}>
      <select id="machine_id" aria-invalid={!!error} aria-describedby={describedBy} value={value} onChange={onChange}>
        <option value="">{t.admin.automaticMachine}</option>
        {machines.map((m) => <option key={m.id} value={m.id}>{m.name}</option>)}
      </select>
    </Field>
  );
}

/** A catalogue record's name: unique in the workspace, the control the form opens on. */
export function NameField<F extends { name: string }>({ form: { form, set, input, errors } }: { form: AdminFormState<F> }) {
  return (
    <Field id="name" label={t.admin.name} hint={t.catalogue.nameHint} error={errors.fields.name}>
      <input {...input('name', true)} value={form.name} maxLength={100} onChange={set('name')} autoFocus />
    </Field>
  );
}

export function DescriptionField<F extends { description: string }>({ form: { form, set, input, errors } }: { form: AdminFormState<F> }) {
  return (
    <Field id="description" label={t.catalogue.description} error={errors.fields.description}>
      <input {...input('description')} value={form.description} maxLength={2000} onChange={set('description')} />
    </Field>
  );
}

type TextKey<F> = { [K in keyof F]: F[K] extends string ? K : never }[keyof F] & string;
type CheckKey<F> = { [K in keyof F]: F[K] extends boolean ? K : never }[keyof F] & string;

/** A whole number typed in a text field of the form (the API says its range). */
export function NumberField<F>({ form: { form, set, input, errors }, id, label, hint, min, max }: {
  form: AdminFormState<F>;
  id: TextKey<F>;
  label: string;
  hint: string;
  min?: number;
  max?: number;
}) {
  return (
    <Field id={id} label={label} hint={hint} error={errors.fields[id]}>
      <input {...input(id, true)} type="number" inputMode="numeric" min={min} max={max} value={String(form[id])} onChange={set(id)} />
    </Field>
  );
}

/** A check box of the form (`is_active` and the like). */
export function CheckField<F>({ form: { form, toggle }, id, label }: { form: AdminFormState<F>; id: CheckKey<F>; label: string }) {
  return <ActiveCheck checked={form[id] === true} label={label} onChange={toggle(id)} />;
}

/** The selects' options could not be read: the form says so rather than offer an empty list. */
export function OptionsFailed({ failed }: { failed: boolean }) {
  return failed ? <p className="form-error" role="alert">{t.admin.cannotLoadOptions}</p> : null;
}

/** A text field of the form; `hint` is linked to it, the rest goes to the input as it is. */
export function TextField<F>({ form: { form, set, input, errors }, id, label, hint, ...more }: {
  form: AdminFormState<F>;
  id: TextKey<F>;
  label: string;
  hint?: string;
  maxLength?: number;
  spellCheck?: boolean;
}) {
  return (
    <Field id={id} label={label} hint={hint} error={errors.fields[id]}>
      <input {...input(id, !!hint)} value={String(form[id])} onChange={set(id)} {...more} />
    </Field>
  );
}

/** Another record it names, or none: the active ones, and the one it names already even if no longer active. */
export function RecordSelect<F>({ form: { form, set, input, errors }, id, label, none, records }: {
  form: AdminFormState<F>;
  id: TextKey<F>;
  label: string;
  none: string;
  records: ReadonlyArray<Named & { is_active: boolean }>;
}) {
  const chosen = String(form[id]);
  return (
    <Field id={id} label={label} error={errors.fields[id]}>
      <select {...input(id)} value={chosen} onChange={set(id)}>
        <option value="">{none}</option>
        {records.filter((r) => r.is_active || r.id === chosen).map((r) => <option key={r.id} value={r.id}>{r.name}</option>)}
      </select>
    </Field>
  );
}

/** The environments whose assets a machine reads (none checked: all of them). */
export function EnvironmentsField({ value, error, onChange }: { value: readonly Environment[]; error?: string; onChange(value: Environment[]): void }) {
  return (
    <fieldset aria-describedby={['machine-environments-hint', error && 'machine-environments-error'].filter(Boolean).join(' ')}>
      <legend>{t.machinesAdmin.environmentsLegend}</legend>
      {ENVIRONMENTS.map((env) => (
        <label key={env} className="check">
          <input type="checkbox" checked={value.includes(env)}
            onChange={(e) => onChange(e.target.checked ? [...value, env] : value.filter((v) => v !== env))} />
          <span>{t.apiKeys.environmentNames[env]}</span>
        </label>
      ))}
      <span className="hint" id="machine-environments-hint">{t.machinesAdmin.environmentsHint}</span>
      {error && <span className="field-error" id="machine-environments-error">{error}</span>}
    </fieldset>
  );
}
