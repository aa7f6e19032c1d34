import { CataloguePage, statusColumn } from '../components/CataloguePage';
import { CheckField, DescriptionField, NameField } from '../components/CatalogueFields';
import { t } from '../i18n';
import type { Folder } from '../lib/api';
import type { Catalogue, FieldsProps } from '../lib/catalogue-page';
import { formReader } from '../lib/form-reading';

interface FolderValues { name: string; description: string; is_active: boolean }

function body(values: FolderValues) {
  return formReader().body({ name: values.name.trim(), description: values.description.trim() || null, is_active: values.is_active });
}

const FOLDERS: Catalogue<Folder, FolderValues, 'createFolder', 'updateFolder'> = {
  queryKey: ['folders'],
  refreshes: [['folders']],
  list: (api) => api.request('listWorkspaceFolders', { query: { limit: 100 } }),
  create: (api, body) => api.request('createFolder', { body }),
  update: (api, id, body) => api.request('updateFolder', { path: { id }, body }),
  deactivate: (api, id) => api.request('deactivateFolder', { path: { id } }),
  texts: { ...t.folders, newRecord: t.folders.newFolder },
  label: (f) => f.name,
  className: 'folders',
  rowData: (f) => ({ 'data-folder': f.name }),
  columns: [
    { header: t.admin.name, cell: (f) => f.name },
    { header: t.catalogue.description, className: 'wrap', cell: (f) => f.description ?? <span className="muted">{t.common.none}</span> },
    statusColumn(),
  ],
  dependants: (f) => ({ resource: 'folder', record: f }),
  form: {
    id: 'folder',
    fields: ['name', 'description', 'is_active'],
    initial: (f) => ({ name: f?.name ?? '', description: f?.description ?? '', is_active: f?.is_active ?? true }),
    create: body,
    update: body,
    controls: folderControls,
  },
};

function folderControls({ form }: FieldsProps<Folder, FolderValues>) {
  return (
    <>
      <div className="form-grid">
        <NameField form={form} />
        <DescriptionField form={form} />
      </div>
      <CheckField form={form} id="is_active" label={t.folders.isActive} />
    </>
  );
}

/** Folders that group processes (admins: the API's folder reads are an admin's). */
export function FoldersPage() {
  return <CataloguePage catalogue={FOLDERS} />;
}
