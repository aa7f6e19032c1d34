import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AdminTable } from '../components/AdminTable';
import { ActiveCheck, FormActions, NO_ERRORS, useAdminForm } from '../components/AdminForm';
import { Dependants } from '../components/Dependants';
import { DeactivateDialog, useDeactivation } from '../components/Deactivation';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import { assetEnvValue, type AssetType, type EnvInput } from '../lib/catalogue';
import type { BodyOf } from '@svc/client';
import { ENVIRONMENTS, type Asset } from '../lib/api';
import { useSession } from '../session-context';

const FIELDS = ['name', 'type', 'description', 'values', 'is_active'] as const;
const ASSET_TYPES = ['text', 'integer', 'boolean', 'credential'] as const satisfies ReadonlyArray<Asset['type']>;
type Env = (typeof ENVIRONMENTS)[number];
type StoredValue = Asset['values'][Env];

/** A stored value as the list shows it: a credential's user name and that a password is kept, never the password. */
function ValueView({ value }: { value: StoredValue }) {
  if (value === null || value === undefined) return <span className="muted">{t.assets.unset}</span>;
  if (typeof value === 'object') {
    return <span data-credential="">{value.username}{value.has_password && <span className="muted small block">{t.assets.passwordStored}</span>}</span>;
  }
  if (typeof value === 'boolean') return <>{value ? t.common.yes : t.common.no}</>;
  return <span className="wrap">{String(value)}</span>;
}

/** Assets (admins): values per environment; a credential's password is written, never read back. */
export function AssetsPage() {
  const { api } = useSession();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<Asset | 'new' | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  const assets = useQuery({ queryKey: ['assets'], queryFn: () => api.request('listWorkspaceAssets', { query: { limit: 100 } }) });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['assets'] });
  const deactivation = useDeactivation<Asset>((id) => api.request('deactivateAsset', { path: { id } }), (a) => { setNotice(t.assets.deactivated(a.name)); void refresh(); });

  return (
    <>
      <div className="title-row">
        <h1>{t.assets.title}</h1>
        {editing === null && <button type="button" onClick={() => { setEditing('new'); setNotice(null); }}>{t.assets.newAsset}</button>}
      </div>
      <p className="muted">{t.assets.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {editing !== null && (
        <AssetForm key={editing === 'new' ? 'new' : editing.id} asset={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={(a) => { setEditing(null); setNotice(t.assets.saved(a.name)); void refresh(); }} />
      )}

      <AdminTable
        query={assets}
        caption={t.assets.caption}
        className="assets"
        empty={t.assets.empty}
        head={<>
          <th scope="col">{t.admin.name}</th>
          <th scope="col">{t.assets.type}</th>
          {ENVIRONMENTS.map((env) => <th key={env} scope="col">{env}</th>)}
          <th scope="col">{t.admin.status}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(a) => (
          <tr key={a.id} data-asset={a.name}>
            <th scope="row">{a.name}{a.description && <span className="muted small block">{a.description}</span>}</th>
            <td>{t.assets.types[a.type] ?? a.type}</td>
            {ENVIRONMENTS.map((env) => <td key={env} data-env={env}><ValueView value={a.values[env]} /></td>)}
            <td><span className={`badge ${a.is_active ? 'badge-completed' : ''}`}>{a.is_active ? t.admin.active : t.admin.inactive}</span></td>
            <td><div className="row-actions">
              <button type="button" className="secondary" aria-label={t.assets.editLabel(a.name)} onClick={() => { setEditing(a); setNotice(null); }}>{t.admin.edit}</button>
              {a.is_active && <button type="button" className="danger" aria-label={t.assets.deactivateLabel(a.name)} onClick={() => deactivation.ask(a)}>{t.admin.deactivate}</button>}
            </div></td>
          </tr>
        )}
      />

      <DeactivateDialog deactivation={deactivation} title={(a) => t.assets.deactivateTitle(a.name)}>
        <p>{t.assets.deactivateBody}</p>
        {deactivation.pending && <Dependants resource="asset" record={deactivation.pending} />}
      </DeactivateDialog>
    </>
  );
}

const EMPTY_ENV: EnvInput = { text: '', username: '', password: '', remove: false };

function AssetForm({ asset, onCancel, onSaved }: { asset: Asset | null; onCancel(): void; onSaved(a: Asset): void }) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    name: asset?.name ?? '',
    type: (asset?.type ?? 'text') as AssetType,
    description: asset?.description ?? '',
    is_active: asset?.is_active ?? true,
  }));
  // the stored values fill the fields back, except a credential's password (never answered)
  const [values, setValues] = useState<Record<Env, EnvInput>>(() => Object.fromEntries(ENVIRONMENTS.map((env) => {
    const v = asset?.values[env];
    if (v === null || v === undefined) return [env, EMPTY_ENV];
    if (typeof v === 'object') return [env, { ...EMPTY_ENV, username: v.username }];
    return [env, { ...EMPTY_ENV, text: String(v) }];
  })) as Record<Env, EnvInput>);
  const setEnv = (env: Env, patch: Partial<EnvInput>) => setValues((vs) => ({ ...vs, [env]: { ...vs[env], ...patch } }));

  const save = useMutation({
    mutationFn: (body: Record<string, unknown>) => asset
      ? api.request('updateAsset', { path: { id: asset.id }, body: body as BodyOf<'updateAsset'> })
      : api.request('createAsset', { body: body as BodyOf<'createAsset'> }),
    onSuccess: ({ data }) => onSaved(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    const sent: Record<string, unknown> = {};
    for (const env of ENVIRONMENTS) {
      // an edit of a credential whose fields were left as they were (the user name only) sends nothing for it
      const v = values[env];
      const stored = asset?.values[env];
      const storedUser = stored !== null && typeof stored === 'object' ? stored.username : '';
      const untouchedCredential = asset && form.type === 'credential' && !v.password && !v.remove && v.username === storedUser;
      const value = untouchedCredential ? undefined : assetEnvValue(form.type, v);
      if (value !== undefined) sent[env] = value;
    }
    save.mutate({
      name: form.name.trim(),
      type: form.type,
      description: form.description.trim() || null,
      ...(Object.keys(sent).length > 0 ? { values: sent } : {}),
      is_active: form.is_active,
    });
  }

  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="asset-form-title">
      <h2 id="asset-form-title">{asset ? t.assets.editTitle(asset.name) : t.assets.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      <div className="form-grid">
        <Field id="name" label={t.admin.name} hint={t.catalogue.nameHint} error={fe.name}>
          <input {...input('name', true)} value={form.name} maxLength={100} onChange={set('name')} autoFocus />
        </Field>
        <Field id="type" label={t.assets.type} hint={asset ? t.assets.typeHint : undefined} error={fe.type}>
          <select {...input('type', !!asset)} value={form.type} onChange={set('type')}>
            {ASSET_TYPES.map((ty) => <option key={ty} value={ty}>{t.assets.types[ty]}</option>)}
          </select>
        </Field>
        <Field id="description" label={t.catalogue.description} error={fe.description}>
          <input {...input('description')} value={form.description} maxLength={2000} onChange={set('description')} />
        </Field>
      </div>
      <fieldset className="asset-values" aria-describedby={['values-hint', fe.values && 'values-error'].filter(Boolean).join(' ')}>
        <legend>{t.assets.values}</legend>
        <p className="hint" id="values-hint">{t.assets.valuesHint}{form.type === 'credential' && <> {t.assets.passwordHint}</>}</p>
        {fe.values && <p className="field-error" id="values-error">{fe.values}</p>}
        <div className="form-grid">
          {ENVIRONMENTS.map((env) => (
            <div key={env} className="env-value" data-env-input={env}>
              {form.type === 'credential' ? (
                <>
                  <Field id={`value-${env}-username`} label={t.assets.username(env)}>
                    <input id={`value-${env}-username`} value={values[env].username} autoComplete="off" disabled={values[env].remove}
                      onChange={(e) => setEnv(env, { username: e.target.value })} />
                  </Field>
                  <Field id={`value-${env}-password`} label={t.assets.password(env)}>
                    <input id={`value-${env}-password`} type="password" value={values[env].password} autoComplete="new-password" disabled={values[env].remove}
                      onChange={(e) => setEnv(env, { password: e.target.value })} />
                  </Field>
                </>
              ) : form.type === 'boolean' ? (
                <Field id={`value-${env}`} label={t.assets.value(env)}>
                  <select id={`value-${env}`} value={values[env].text} disabled={values[env].remove} onChange={(e) => setEnv(env, { text: e.target.value })}>
                    {['', 'true', 'false'].map((b) => <option key={b} value={b}>{t.assets.booleanChoices[b]}</option>)}
                  </select>
                </Field>
              ) : (
                <Field id={`value-${env}`} label={t.assets.value(env)}>
                  <input id={`value-${env}`} value={values[env].text} disabled={values[env].remove}
                    inputMode={form.type === 'integer' ? 'numeric' : undefined} onChange={(e) => setEnv(env, { text: e.target.value })} />
                </Field>
              )}
              {asset && asset.values[env] !== null && asset.values[env] !== undefined && (
                <label className="check">
                  <input type="checkbox" checked={values[env].remove} onChange={(e) => setEnv(env, { remove: e.target.checked })} />
                  <span>{t.assets.remove(env)}</span>
                </label>
              )}
            </div>
          ))}
        </div>
      </fieldset>
      <ActiveCheck checked={form.is_active} label={t.assets.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
