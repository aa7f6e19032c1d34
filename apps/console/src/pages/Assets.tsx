import { CataloguePage, statusColumn } from '../components/CataloguePage';
import { AssetValuesField, perEnvironment, type EnvInputs } from '../components/AssetValuesField';
import { CheckField, DescriptionField, NameField } from '../components/CatalogueFields';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { ENVIRONMENTS, type Asset, type Environment } from '../lib/api';
import { assetEnvValue, type AssetType, type EnvInput } from '../lib/catalogue';
import type { Catalogue, FieldsProps } from '../lib/catalogue-page';
import { formReader } from '../lib/form-reading';

const ASSET_TYPES = ['text', 'integer', 'boolean', 'credential'] satisfies ReadonlyArray<Asset['type']>;
type StoredValue = Asset['values'][Environment];
const EMPTY_ENV: EnvInput = { text: '', username: '', password: '', remove: false };

interface AssetValues { name: string; type: AssetType; description: string; is_active: boolean; values: EnvInputs }

const initial = (a: Asset | null): AssetValues => ({
  name: a?.name ?? '',
  type: a?.type ?? 'text',
  description: a?.description ?? '',
  is_active: a?.is_active ?? true,
  // the stored values fill the fields back, except a credential's password (never answered)
  values: perEnvironment((env) => {
    const v = a?.values[env];
    if (v === null || v === undefined) return EMPTY_ENV;
    return typeof v === 'object' ? { ...EMPTY_ENV, username: v.username } : { ...EMPTY_ENV, text: String(v) };
  }),
});

function body(form: AssetValues, asset: Asset | null) {
  const values: Partial<Record<Environment, unknown>> = {};
  for (const env of ENVIRONMENTS) {
    // an edit of a credential whose fields were left as they were (the user name only) sends nothing for it
    const v = form.values[env];
    const stored = asset?.values[env];
    const storedUser = stored !== null && typeof stored === 'object' ? stored.username : '';
    const untouchedCredential = asset && form.type === 'credential' && !v.password && !v.remove && v.username === storedUser;
    const value = untouchedCredential ? undefined : assetEnvValue(form.type, v);
    if (value !== undefined) values[env] = value;
  }
  return formReader().body({
    name: form.name.trim(),
    type: form.type,
    description: form.description.trim() || null,
    ...(Object.keys(values).length > 0 ? { values } : {}),
    is_active: form.is_active,
  });
}

/** A stored value as the list shows it: a credential's user name and that a password is kept, never the password. */
function ValueView({ value }: { value: StoredValue }) {
  if (value === null || value === undefined) return <span className="muted">{t.assets.unset}</span>;
  if (typeof value === 'object') {
    return <span data-credential="">{value.username}{value.has_password && <span className="muted small block">{t.assets.passwordStored}</span>}</span>;
  }
  if (typeof value === 'boolean') return <>{value ? t.common.yes : t.common.no}</>;
  return <span className="wrap">{String(value)}</span>;
}

const ASSETS: Catalogue<Asset, AssetValues, 'createAsset', 'updateAsset'> = {
  queryKey: ['assets'],
  refreshes: [['assets']],
  list: (api) => api.request('listWorkspaceAssets', { query: { limit: 100 } }),
  create: (api, body) => api.request('createAsset', { body }),
  update: (api, id, body) => api.request('updateAsset', { path: { id }, body }),
  deactivate: (api, id) => api.request('deactivateAsset', { path: { id } }),
  texts: { ...t.assets, newRecord: t.assets.newAsset },
  label: (a) => a.name,
  className: 'assets',
  rowData: (a) => ({ 'data-asset': a.name }),
  columns: [
    { header: t.admin.name, cell: (a) => <>{a.name}{a.description && <span className="muted small block">{a.description}</span>}</> },
    { header: t.assets.type, cell: (a) => t.assets.types[a.type] ?? a.type },
    ...ENVIRONMENTS.map((env) => ({ header: env, data: { 'data-env': env }, cell: (a: Asset) => <ValueView value={a.values[env]} /> })),
    statusColumn(),
  ],
  dependants: (a) => ({ resource: 'asset', record: a }),
  form: {
    id: 'asset',
    fields: ['name', 'type', 'description', 'values', 'is_active'],
    initial,
    create: (values) => body(values, null),
    update: body,
    controls: assetControls,
  },
};

function assetControls({ record, form }: FieldsProps<Asset, AssetValues>) {
  const { form: values, setForm, set, input, errors: { fields: fe } } = form;
  return (
    <>
      <div className="form-grid">
        <NameField form={form} />
        <Field id="type" label={t.assets.type} hint={record ? t.assets.typeHint : undefined} error={fe.type}>
          <select {...input('type', !!record)} value={values.type} onChange={set('type')}>
            {ASSET_TYPES.map((ty) => <option key={ty} value={ty}>{t.assets.types[ty]}</option>)}
          </select>
        </Field>
        <DescriptionField form={form} />
      </div>
      <AssetValuesField type={values.type} values={values.values} stored={record?.values} error={fe.values}
        onChange={(env, patch) => setForm((f) => ({ ...f, values: { ...f.values, [env]: { ...f.values[env], ...patch } } }))} />
      <CheckField form={form} id="is_active" label={t.assets.isActive} />
    </>
  );
}

/** Assets (admins): values per environment; a credential's password is written, never read back. */
export function AssetsPage() {
  return <CataloguePage catalogue={ASSETS} />;
}
