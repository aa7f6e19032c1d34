import { useMemo, useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { ApiError } from '../lib/errors';
import { answerErrorPlacement, buildAnswer, choiceLabel, controlName, inputForm, type InputField } from '../lib/jobs';
import type { Job } from '../lib/api';
import { useSession } from '../session-context';

interface Errors {
  fields: Record<string, string>;
  general: string | null;
}
const NO_ERRORS: Errors = { fields: {}, general: null };

/**
 * The question of a job in `waiting_input` and, for an admin, the form that answers it, drawn
 * from the question's options (choices, a flat schema, or JSON for anything else). Each message
 * of the API goes next to the control it concerns.
 */
export function JobInput({ job, canAnswer, onAnswered }: { job: Job; canAnswer: boolean; onAnswered(job: Job): void }) {
  const { api } = useSession();
  const form = useMemo(() => inputForm(job.pending_input_options), [job.pending_input_options]);
  const [raw, setRaw] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Errors>(NO_ERRORS);
  const controls = form.kind === 'fields' ? form.fields.map(controlName) : ['value'];

  const answer = useMutation({
    mutationFn: (value: unknown) => api.request('answerJobInput', { path: { job_id: job.id }, body: { value } }),
    onSuccess: ({ data }) => { setErrors(NO_ERRORS); onAnswered(data); },
    onError: (err) => setErrors(err instanceof ApiError ? answerErrorPlacement(err, controls) : { fields: {}, general: t.common.unexpectedError }),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    const built = buildAnswer(form, raw);
    if (!built.ok) {
      const fields: Record<string, string> = {};
      for (const [k, p] of Object.entries(built.problems)) fields[k] = t.jobs.problems[p] ?? p;
      setErrors({ fields, general: null });
      return;
    }
    answer.mutate(built.value);
  }

  const set = (name: string, value: string) => setRaw((r) => ({ ...r, [name]: value }));
  const described = (id: string, hint?: boolean) => [hint ? `${id}-hint` : '', errors.fields[id.replace(/^answer-/, '')] ? `${id}-error` : ''].filter(Boolean).join(' ') || undefined;

  return (
    <section className="card wide question" aria-labelledby="question-title">
      <h2 id="question-title">{t.jobs.question}</h2>
      <p className="prompt" data-prompt>{job.pending_input_prompt}</p>
      {!canAnswer ? <p className="muted">{t.jobs.membersCannotAnswer}</p> : (
        <form onSubmit={submit} noValidate>
          {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
          {form.kind === 'choices' && (
            <fieldset aria-describedby={errors.fields.value ? 'answer-value-error' : undefined}>
              <legend>{t.jobs.chooseOne}</legend>
              {form.choices.map((c, i) => (
                <label key={i} className="choice">
                  <input type="radio" name="answer-choice" value={String(i)} checked={raw.value === String(i)} onChange={() => set('value', String(i))} />
                  {choiceLabel(c)}
                </label>
              ))}
              {errors.fields.value && <span className="field-error" id="answer-value-error">{errors.fields.value}</span>}
            </fieldset>
          )}
          {form.kind === 'fields' && form.fields.map((f) => (
            <InputControl key={controlName(f)} field={f} value={raw[controlName(f)] ?? ''} error={errors.fields[controlName(f)]}
              onChange={(v) => set(controlName(f), v)} describedBy={described(`answer-${controlName(f)}`, !!f.description)} />
          ))}
          {form.kind === 'json' && (
            <>
              {form.schema !== null && (
                <details>
                  <summary>{t.jobs.schema}</summary>
                  <pre tabIndex={0} role="region" aria-label={t.jobs.schema}>{JSON.stringify(form.schema, null, 2)}</pre>
                </details>
              )}
              <Field id="answer-value" label={t.jobs.jsonAnswer} hint={t.jobs.jsonHint} error={errors.fields.value}>
                <textarea id="answer-value" rows={4} value={raw.value ?? ''} onChange={(e) => set('value', e.target.value)} spellCheck={false}
                  aria-invalid={!!errors.fields.value} aria-describedby={described('answer-value', true)} />
              </Field>
            </>
          )}
          <button type="submit" disabled={answer.isPending}>{answer.isPending ? t.jobs.answering : t.jobs.answer}</button>
        </form>
      )}
    </section>
  );
}

function InputControl({ field, value, error, onChange, describedBy }: {
  field: InputField; value: string; error?: string; onChange(v: string): void; describedBy?: string;
}) {
  const id = `answer-${controlName(field)}`;
  const label = field.name ? `${field.label}${field.required ? '' : ` ${t.jobs.optional}`}` : t.jobs.yourAnswer;
  const common = { id, 'aria-invalid': !!error, 'aria-describedby': describedBy, 'aria-required': field.required };
  return (
    <Field id={id} label={label} hint={field.description} error={error}>
      {field.type === 'enum' ? (
        <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">{t.jobs.choose}</option>
          {(field.options ?? []).map((o, i) => <option key={i} value={String(i)}>{choiceLabel(o)}</option>)}
        </select>
      ) : field.type === 'boolean' ? (
        <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">{t.jobs.choose}</option>
          <option value="true">{t.common.yes}</option>
          <option value="false">{t.common.no}</option>
        </select>
      ) : (
        <input {...common} type="text" inputMode={field.type === 'string' ? undefined : 'decimal'} value={value} onChange={(e) => onChange(e.target.value)} />
      )}
    </Field>
  );
}
