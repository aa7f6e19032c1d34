import type { FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import type { OperationId } from '@svc/client';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import type { Catalogue, CatalogueRecord } from '../lib/catalogue-page';
import { useSession } from '../session-context';
import { FormActions, NO_ERRORS, useAdminForm } from './AdminForm';

/**
 * The create or edit form of a catalogue page: its title, the errors that are no field's, the
 * page's controls and save/cancel. The values are read into the request body before it is sent;
 * the API's answer puts its messages next to the fields.
 */
export function CatalogueForm<Row extends CatalogueRecord, Values extends object, Create extends OperationId, Update extends OperationId>({ catalogue, record, onCancel, onSaved }: {
  catalogue: Catalogue<Row, Values, Create, Update>;
  record: Row | null;
  onCancel(): void;
  onSaved(record: Row): void;
}) {
  const { api } = useSession();
  const { form: spec, texts, label } = catalogue;
  const state = useAdminForm(() => spec.initial(record));
  const { form, errors, setErrors } = state;
  const save = useMutation({
    mutationFn: (send: () => Promise<{ data: Row }>) => send(),
    onSuccess: ({ data }) => onSaved(data),
    onError: (err) => setErrors(topLevelErrors(err, spec.fields, t.common.unexpectedError)),
  });

  // create and update read different bodies (each its operation's), hence two branches
  function submit(e: FormEvent) {
    e.preventDefault();
    if (record) {
      const reading = spec.update(form, record);
      setErrors('errors' in reading ? reading.errors : NO_ERRORS);
      if ('body' in reading) save.mutate(() => catalogue.update(api, record.id, reading.body));
    } else {
      const reading = spec.create(form);
      setErrors('errors' in reading ? reading.errors : NO_ERRORS);
      if ('body' in reading) save.mutate(() => catalogue.create(api, reading.body));
    }
  }

  const titleId = `${spec.id}-form-title`;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby={titleId}>
      <h2 id={titleId}>{record ? texts.editTitle(label(record)) : texts.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      {spec.controls({ record, form: state })}
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
