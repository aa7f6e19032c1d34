import { useState, type Dispatch, type SetStateAction } from 'react';
import { t } from '../i18n';
import type { FormErrors } from '../lib/errors';

export const NO_ERRORS: FormErrors = { fields: {}, general: null };

/** A control's aria-describedby: its hint and its error (see Field), those shown. */
export const describedBy = (id: string, hint: boolean, error: boolean) => [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ') || undefined;

/**
 * The state of an admin form whose controls are named by its fields: the values, the errors
 * the API answered, `set(field)` for a control's onChange and `input(field)` for its id and
 * accessibility attributes.
 */
export function useAdminForm<F extends object>(initial: () => F): AdminFormState<F> {
  const [form, setForm] = useState(initial);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);
  const fe = errors.fields;
  return {
    form, setForm, errors, setErrors,
    set: (k) => (e) => setForm((f) => ({ ...f, [k]: e.target.value })),
    toggle: (k) => (on) => setForm((f) => ({ ...f, [k]: on })),
    input: (id, hint = false) => ({ id, 'aria-invalid': !!fe[id], 'aria-describedby': describedBy(id, hint, !!fe[id]) }),
  };
}

export interface AdminFormState<F> {
  form: F;
  setForm: Dispatch<SetStateAction<F>>;
  errors: FormErrors;
  setErrors(errors: FormErrors): void;
  /** a text control's onChange */
  set(k: keyof F): (e: { target: { value: string } }) => void;
  /** a check box's onChange (see ActiveCheck) */
  toggle(k: keyof F): (on: boolean) => void;
  input(id: keyof F & string, hint?: boolean): { id: string; 'aria-invalid': boolean; 'aria-describedby': string | undefined };
}

/** The `is_active` check box of an admin form. */
export function ActiveCheck({ checked, label, onChange }: { checked: boolean; label: string; onChange(checked: boolean): void }) {
  return (
    <label className="check">
      <input type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} />
      <span>{label}</span>
    </label>
  );
}

/** Save and cancel, at the foot of an admin form. */
export function FormActions({ saving, onCancel }: { saving: boolean; onCancel(): void }) {
  return (
    <div className="form-actions">
      <button type="submit" disabled={saving}>{saving ? t.admin.saving : t.admin.save}</button>
      <button type="button" className="secondary" onClick={onCancel}>{t.common.cancel}</button>
    </div>
  );
}
