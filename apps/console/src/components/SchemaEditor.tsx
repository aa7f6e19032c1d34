import { useMemo } from 'react';
import { t } from '../i18n';
import { parseSchemaText, sampleFromSchema } from '../lib/catalogue';
import { Field } from './Field';

/** A process's input schema as JSON, beside a sample input of its shape (once it reads as an object). */
export function SchemaEditor({ value, error, control }: {
  value: string;
  error?: string;
  /** the text area's id, aria attributes and onChange */
  control: { id: string; 'aria-invalid': boolean; 'aria-describedby': string | undefined; onChange(e: { target: { value: string } }): void };
}) {
  const schema = useMemo(() => parseSchemaText(value), [value]);
  const sample = schema.ok && schema.value ? JSON.stringify(sampleFromSchema(schema.value), null, 2) : null;
  return (
    <div className="schema-editor">
      <Field id={control.id} label={t.processes.inputSchema} hint={t.processes.inputSchemaHint} error={error}>
        <textarea {...control} rows={10} spellCheck={false} className="code" value={value} />
      </Field>
      <section className="schema-sample" aria-labelledby="schema-sample-title">
        <h3 id="schema-sample-title">{t.processes.sampleTitle}</h3>
        {sample !== null ? <pre className="json" data-sample="" tabIndex={0} aria-labelledby="schema-sample-title">{sample}</pre> : <p className="muted small">{t.processes.sampleNone}</p>}
      </section>
    </div>
  );
}
