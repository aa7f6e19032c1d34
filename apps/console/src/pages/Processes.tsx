import { useMemo, useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AdminTable } from '../components/AdminTable';
import { ActiveCheck, FormActions, NO_ERRORS, useAdminForm } from '../components/AdminForm';
import { Dependants } from '../components/Dependants';
import { DeactivateDialog, useDeactivation } from '../components/Deactivation';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import { numberOrText, parseList, parseSchemaText, sampleFromSchema } from '../lib/catalogue';
import type { BodyOf } from '@svc/client';
import type { Folder, Process } from '../lib/api';
import { useSession } from '../session-context';

const FIELDS = [
  'name', 'description', 'release_id', 'folder_id', 'input_schema', 'timeout_seconds', 'max_retries', 'auto_retry',
  'retry_delay_seconds', 'tags', 'sla_deadline_minutes', 'on_success_trigger_process_id', 'required_assets', 'is_active',
] as const;

/** Processes (admins: the API's process reads are an admin's): every field, the input schema with a sample. */
export function ProcessesPage() {
  const { api } = useSession();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<Process | 'new' | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const processes = useQuery({ queryKey: ['processes'], queryFn: () => api.request('listWorkspaceProcesses', { query: { limit: 100 } }) });
  const folders = useQuery({ queryKey: ['folders'], queryFn: () => api.request('listWorkspaceFolders', { query: { limit: 100 } }) });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['processes'] }).then(() => queryClient.invalidateQueries({ queryKey: ['options'] }));
  const deactivation = useDeactivation<Process>((id) => api.request('deactivateProcess', { path: { id } }), (p) => { setNotice(t.processes.deactivated(p.name)); void refresh(); });
  const folderName = (id: string | null) => (id === null ? null : folders.data?.data.find((f) => f.id === id)?.name ?? `${id.slice(0, 8)}…`);
  const processName = (id: string | null) => (id === null ? null : processes.data?.data.find((p) => p.id === id)?.name ?? `${id.slice(0, 8)}…`);

  return (
    <>
      <div className="title-row">
        <h1>{t.processes.title}</h1>
        {editing === null && <button type="button" onClick={() => { setEditing('new'); setNotice(null); }}>{t.processes.newProcess}</button>}
      </div>
      <p className="muted">{t.processes.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {editing !== null && (
        <ProcessForm key={editing === 'new' ? 'new' : editing.id} process={editing === 'new' ? null : editing}
          processes={processes.data?.data ?? []} folders={folders.data?.data ?? []} optionsFailed={folders.isError}
          onCancel={() => setEditing(null)}
          onSaved={(p) => { setEditing(null); setNotice(t.processes.saved(p.name)); void refresh(); }} />
      )}

      <AdminTable
        query={processes}
        caption={t.processes.caption}
        className="processes"
        empty={t.processes.empty}
        head={<>
          <th scope="col">{t.admin.name}</th>
          <th scope="col">{t.processes.folder}</th>
          <th scope="col" className="num">{t.processes.timeout}</th>
          <th scope="col" className="num">{t.processes.maxRetries}</th>
          <th scope="col">{t.processes.onSuccess}</th>
          <th scope="col">{t.processes.tags}</th>
          <th scope="col">{t.admin.status}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(p) => (
          <tr key={p.id} data-process={p.name}>
            <th scope="row">{p.name}{p.input_schema && <span className="muted small block">{t.processes.hasSchema}</span>}</th>
            <td>{folderName(p.folder_id) ?? <span className="muted">{t.processes.noFolder}</span>}</td>
            <td className="num">{p.timeout_seconds}</td>
            <td className="num">{p.max_retries}</td>
            <td>{processName(p.on_success_trigger_process_id) ?? <span className="muted">{t.common.none}</span>}</td>
            <td className="wrap">{p.tags?.join(', ') ?? <span className="muted">{t.common.none}</span>}</td>
            <td><span className={`badge ${p.is_active ? 'badge-completed' : ''}`}>{p.is_active ? t.admin.active : t.admin.inactive}</span></td>
            <td><div className="row-actions">
              <button type="button" className="secondary" aria-label={t.processes.editLabel(p.name)} onClick={() => { setEditing(p); setNotice(null); }}>{t.admin.edit}</button>
              {p.is_active && <button type="button" className="danger" aria-label={t.processes.deactivateLabel(p.name)} onClick={() => deactivation.ask(p)}>{t.admin.deactivate}</button>}
            </div></td>
          </tr>
        )}
      />

      <DeactivateDialog deactivation={deactivation} title={(p) => t.processes.deactivateTitle(p.name)}>
        <p>{t.processes.deactivateBody}</p>
        {deactivation.pending && <Dependants resource="process" record={deactivation.pending} />}
      </DeactivateDialog>
    </>
  );
}

function ProcessForm({ process, processes, folders, optionsFailed, onCancel, onSaved }: {
  process: Process | null;
  processes: Process[];
  folders: Folder[];
  optionsFailed: boolean;
  onCancel(): void;
  onSaved(p: Process): void;
}) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    name: process?.name ?? '',
    description: process?.description ?? '',
    release_id: process?.release_id ?? '',
    folder_id: process?.folder_id ?? '',
    input_schema: process?.input_schema ? JSON.stringify(process.input_schema, null, 2) : '',
    timeout_seconds: String(process?.timeout_seconds ?? 3600),
    max_retries: String(process?.max_retries ?? 0),
    auto_retry: process?.auto_retry ?? false,
    retry_delay_seconds: String(process?.retry_delay_seconds ?? 60),
    tags: process?.tags?.join(', ') ?? '',
    sla_deadline_minutes: process?.sla_deadline_minutes == null ? '' : String(process.sla_deadline_minutes),
    on_success_trigger_process_id: process?.on_success_trigger_process_id ?? '',
    required_assets: process?.required_assets.join(', ') ?? '',
    is_active: process?.is_active ?? true,
  }));

  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => process
      ? api.request('updateProcess', { path: { id: process.id }, body: body as BodyOf<'updateProcess'> })
      : api.request('createProcess', { body: body as BodyOf<'createProcess'> }),
    onSuccess: ({ data }) => onSaved(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });

  const schema = useMemo(() => parseSchemaText(form.input_schema), [form.input_schema]);
  const sample = schema.ok && schema.value ? JSON.stringify(sampleFromSchema(schema.value), null, 2) : null;

  function submit(e: FormEvent) {
    e.preventDefault();
    if (!schema.ok) {
      // a JSON typing mistake is caught here; whether it is a valid JSON Schema is the API's answer
      setErrors({ fields: { input_schema: schema.reason === 'syntax' ? t.processes.badJson : t.processes.notObject }, general: null });
      return;
    }
    setErrors(NO_ERRORS);
    const tags = parseList(form.tags);
    save.mutate({
      name: form.name.trim(),
      description: form.description.trim() || null,
      ...(form.release_id.trim() ? { release_id: form.release_id.trim() } : {}),
      folder_id: form.folder_id || null,
      input_schema: schema.value,
      timeout_seconds: numberOrText(form.timeout_seconds),
      max_retries: numberOrText(form.max_retries),
      auto_retry: form.auto_retry,
      retry_delay_seconds: numberOrText(form.retry_delay_seconds),
      tags: tags.length > 0 ? tags : null,
      sla_deadline_minutes: form.sla_deadline_minutes.trim() ? numberOrText(form.sla_deadline_minutes) : null,
      on_success_trigger_process_id: form.on_success_trigger_process_id || null,
      required_assets: parseList(form.required_assets),
      is_active: form.is_active,
    });
  }

  const fe = errors.fields;
  const num = (id: 'timeout_seconds' | 'max_retries' | 'retry_delay_seconds' | 'sla_deadline_minutes', label: string, hint: string) => (
    <Field id={id} label={label} hint={hint} error={fe[id]}>
      <input {...input(id, true)} type="number" inputMode="numeric" value={form[id]} onChange={set(id)} />
    </Field>
  );
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="process-form-title">
      <h2 id="process-form-title">{process ? t.processes.editTitle(process.name) : t.processes.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      {optionsFailed && <p className="form-error" role="alert">{t.admin.cannotLoadOptions}</p>}
      <div className="form-grid">
        <Field id="name" label={t.admin.name} hint={t.catalogue.nameHint} error={fe.name}>
          <input {...input('name', true)} value={form.name} maxLength={100} onChange={set('name')} autoFocus />
        </Field>
        <Field id="description" label={t.catalogue.description} error={fe.description}>
          <input {...input('description')} value={form.description} maxLength={2000} onChange={set('description')} />
        </Field>
        <Field id="folder_id" label={t.processes.folder} error={fe.folder_id}>
          <select {...input('folder_id')} value={form.folder_id} onChange={set('folder_id')}>
            <option value="">{t.processes.noFolder}</option>
            {folders.filter((f) => f.is_active || f.id === form.folder_id).map((f) => <option key={f.id} value={f.id}>{f.name}</option>)}
          </select>
        </Field>
        <Field id="release_id" label={t.processes.releaseId} hint={t.processes.releaseHint} error={fe.release_id}>
          <input {...input('release_id', true)} value={form.release_id} maxLength={36} spellCheck={false} onChange={set('release_id')} />
        </Field>
        {num('timeout_seconds', t.processes.timeout, t.processes.timeoutHint)}
        {num('max_retries', t.processes.maxRetries, t.processes.maxRetriesHint)}
        {num('retry_delay_seconds', t.processes.retryDelay, t.processes.retryDelayHint)}
        {num('sla_deadline_minutes', t.processes.sla, t.processes.slaHint)}
        <Field id="on_success_trigger_process_id" label={t.processes.onSuccess} error={fe.on_success_trigger_process_id}>
          <select {...input('on_success_trigger_process_id')} value={form.on_success_trigger_process_id} onChange={set('on_success_trigger_process_id')}>
            <option value="">{t.common.none}</option>
            {processes.filter((p) => p.id !== process?.id && (p.is_active || p.id === form.on_success_trigger_process_id))
              .map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </Field>
        <Field id="tags" label={t.processes.tags} hint={t.catalogue.listHint} error={fe.tags}>
          <input {...input('tags', true)} value={form.tags} onChange={set('tags')} />
        </Field>
        <Field id="required_assets" label={t.processes.requiredAssets} hint={t.processes.requiredAssetsHint} error={fe.required_assets}>
          <input {...input('required_assets', true)} value={form.required_assets} onChange={set('required_assets')} />
        </Field>
      </div>
      <div className="schema-editor">
        <Field id="input_schema" label={t.processes.inputSchema} hint={t.processes.inputSchemaHint} error={fe.input_schema}>
          <textarea {...input('input_schema', true)} rows={10} spellCheck={false} className="code" value={form.input_schema} onChange={set('input_schema')} />
        </Field>
        <section className="schema-sample" aria-labelledby="schema-sample-title">
          <h3 id="schema-sample-title">{t.processes.sampleTitle}</h3>
          {sample !== null ? <pre className="json" data-sample="" tabIndex={0} aria-labelledby="schema-sample-title">{sample}</pre> : <p className="muted small">{t.processes.sampleNone}</p>}
        </section>
      </div>
      <ActiveCheck checked={form.auto_retry} label={t.processes.autoRetry} onChange={(on) => setForm((f) => ({ ...f, auto_retry: on }))} />
      <ActiveCheck checked={form.is_active} label={t.processes.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
