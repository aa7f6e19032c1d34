import { t } from '../i18n';
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
