import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AdminTable } from '../components/AdminTable';
import { ActiveCheck, FormActions, NO_ERRORS, useAdminForm } from '../components/AdminForm';
import { Dependants } from '../components/Dependants';
import { DeactivateDialog, useDeactivation } from '../components/Deactivation';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import type { BodyOf } from '@svc/client';
import type { Folder } from '../lib/api';
import { useSession } from '../session-context';

const FIELDS = ['name', 'description', 'is_active'] as const;

/** Folders that group processes (admins: the API's folder reads are an admin's). */
export function FoldersPage() {
  const { api } = useSession();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<Folder | 'new' | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const folders = useQuery({ queryKey: ['folders'], queryFn: () => api.request('listWorkspaceFolders', { query: { limit: 100 } }) });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['folders'] });
  const deactivation = useDeactivation<Folder>((id) => api.request('deactivateFolder', { path: { id } }), (f) => { setNotice(t.folders.deactivated(f.name)); void refresh(); });

  return (
    <>
      <div className="title-row">
        <h1>{t.folders.title}</h1>
        {editing === null && <button type="button" onClick={() => { setEditing('new'); setNotice(null); }}>{t.folders.newFolder}</button>}
      </div>
      <p className="muted">{t.folders.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {editing !== null && (
        <FolderForm key={editing === 'new' ? 'new' : editing.id} folder={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={(f) => { setEditing(null); setNotice(t.folders.saved(f.name)); void refresh(); }} />
      )}

      <AdminTable
        query={folders}
        caption={t.folders.caption}
        className="folders"
        empty={t.folders.empty}
        head={<>
          <th scope="col">{t.admin.name}</th>
          <th scope="col">{t.catalogue.description}</th>
          <th scope="col">{t.admin.status}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(f) => (
          <tr key={f.id} data-folder={f.name}>
            <th scope="row">{f.name}</th>
            <td className="wrap">{f.description ?? <span className="muted">{t.common.none}</span>}</td>
            <td><span className={`badge ${f.is_active ? 'badge-completed' : ''}`}>{f.is_active ? t.admin.active : t.admin.inactive}</span></td>
            <td><div className="row-actions">
              <button type="button" className="secondary" aria-label={t.folders.editLabel(f.name)} onClick={() => { setEditing(f); setNotice(null); }}>{t.admin.edit}</button>
              {f.is_active && <button type="button" className="danger" aria-label={t.folders.deactivateLabel(f.name)} onClick={() => deactivation.ask(f)}>{t.admin.deactivate}</button>}
            </div></td>
          </tr>
        )}
      />

      <DeactivateDialog deactivation={deactivation} title={(f) => t.folders.deactivateTitle(f.name)}>
        <p>{t.folders.deactivateBody}</p>
        {deactivation.pending && <Dependants resource="folder" record={deactivation.pending} />}
      </DeactivateDialog>
    </>
  );
}

function FolderForm({ folder, onCancel, onSaved }: { folder: Folder | null; onCancel(): void; onSaved(f: Folder): void }) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    name: folder?.name ?? '',
    description: folder?.description ?? '',
    is_active: folder?.is_active ?? true,
  }));
  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => folder
      ? api.request('updateFolder', { path: { id: folder.id }, body: body as BodyOf<'updateFolder'> })
      : api.request('createFolder', { body: body as BodyOf<'createFolder'> }),
    onSuccess: ({ data }) => onSaved(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    save.mutate({ name: form.name.trim(), description: form.description.trim() || null, is_active: form.is_active });
  }
  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="folder-form-title">
      <h2 id="folder-form-title">{folder ? t.folders.editTitle(folder.name) : t.folders.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      <div className="form-grid">
        <Field id="name" label={t.admin.name} hint={t.catalogue.nameHint} error={fe.name}>
          <input {...input('name', true)} value={form.name} maxLength={100} onChange={set('name')} autoFocus />
        </Field>
        <Field id="description" label={t.catalogue.description} error={fe.description}>
          <input {...input('description')} value={form.description} maxLength={2000} onChange={set('description')} />
        </Field>
      </div>
      <ActiveCheck checked={form.is_active} label={t.folders.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
