import { useQuery } from '@tanstack/react-query';
import { CataloguePage, statusColumn } from '../components/CataloguePage';
import { CheckField, DescriptionField, NameField, NumberField, OptionsFailed, RecordSelect, TextField } from '../components/CatalogueFields';
import { SchemaEditor } from '../components/SchemaEditor';
import { t } from '../i18n';
import type { ConsoleApi, Process } from '../lib/api';
import { nameIn, parseList } from '../lib/catalogue';
import type { Catalogue, FieldsProps } from '../lib/catalogue-page';
import { formReader } from '../lib/form-reading';
import { useSession } from '../session-context';

type ProcessValues = ReturnType<typeof initial>;

const initial = (p: Process | null) => ({
  name: p?.name ?? '',
  description: p?.description ?? '',
  release_id: p?.release_id ?? '',
  folder_id: p?.folder_id ?? '',
  input_schema: p?.input_schema ? JSON.stringify(p.input_schema, null, 2) : '',
  timeout_seconds: String(p?.timeout_seconds ?? 3600),
  max_retries: String(p?.max_retries ?? 0),
  auto_retry: p?.auto_retry ?? false,
  retry_delay_seconds: String(p?.retry_delay_seconds ?? 60),
  tags: p?.tags?.join(', ') ?? '',
  sla_deadline_minutes: p?.sla_deadline_minutes == null ? '' : String(p.sla_deadline_minutes),
  on_success_trigger_process_id: p?.on_success_trigger_process_id ?? '',
  required_assets: p?.required_assets.join(', ') ?? '',
  is_active: p?.is_active ?? true,
});

function body(v: ProcessValues) {
  const read = formReader();
  const tags = parseList(v.tags);
  return read.body({
    name: v.name.trim(),
    description: v.description.trim() || null,
    // left empty, a new process gets one and an edited one keeps its own
    ...(v.release_id.trim() ? { release_id: v.release_id.trim() } : {}),
    folder_id: v.folder_id || null,
    // whether it is a valid JSON Schema is the API's answer: its validator is the one webhooks meet
    input_schema: read.jsonObject('input_schema', v.input_schema, t.processes),
    timeout_seconds: read.integer('timeout_seconds', v.timeout_seconds),
    max_retries: read.integer('max_retries', v.max_retries),
    auto_retry: v.auto_retry,
    retry_delay_seconds: read.integer('retry_delay_seconds', v.retry_delay_seconds),
    tags: tags.length > 0 ? tags : null,
    sla_deadline_minutes: v.sla_deadline_minutes.trim() ? read.integer('sla_deadline_minutes', v.sla_deadline_minutes) : null,
    on_success_trigger_process_id: v.on_success_trigger_process_id || null,
    required_assets: parseList(v.required_assets),
    is_active: v.is_active,
  });
}

/** The processes and the folders, which the list names and the form offers (one read each, shared). */
function useLists() {
  const { api } = useSession();
  const processes = useQuery({ queryKey: ['processes'], queryFn: () => listProcesses(api) });
  const folders = useQuery({ queryKey: ['folders'], queryFn: () => api.request('listWorkspaceFolders', { query: { limit: 100 } }) });
  return { processes: processes.data?.data ?? [], folders: folders.data?.data ?? [], foldersFailed: folders.isError };
}
const listProcesses = (api: ConsoleApi) => api.request('listWorkspaceProcesses', { query: { limit: 100 } });

/** Processes (admins: the API's process reads are an admin's): every field, the input schema with a sample. */
export function ProcessesPage() {
  const { processes, folders, foldersFailed } = useLists();
  const named = (list: typeof processes | typeof folders, id: string | null, none: string) => (id === null ? <span className="muted">{none}</span> : nameIn(list, id));
  const catalogue: Catalogue<Process, ProcessValues, 'createProcess', 'updateProcess'> = {
    queryKey: ['processes'],
    refreshes: [['processes'], ['options']],
    list: listProcesses,
    create: (api, body) => api.request('createProcess', { body }),
    update: (api, id, body) => api.request('updateProcess', { path: { id }, body }),
    deactivate: (api, id) => api.request('deactivateProcess', { path: { id } }),
    texts: { ...t.processes, newRecord: t.processes.newProcess },
    label: (p) => p.name,
    className: 'processes',
    rowData: (p) => ({ 'data-process': p.name }),
    columns: [
      { header: t.admin.name, cell: (p) => <>{p.name}{p.input_schema && <span className="muted small block">{t.processes.hasSchema}</span>}</> },
      { header: t.processes.folder, cell: (p) => named(folders, p.folder_id, t.processes.noFolder) },
      { header: t.processes.timeout, num: true, cell: (p) => p.timeout_seconds },
      { header: t.processes.maxRetries, num: true, cell: (p) => p.max_retries },
      { header: t.processes.onSuccess, cell: (p) => named(processes, p.on_success_trigger_process_id, t.common.none) },
      { header: t.processes.tags, className: 'wrap', cell: (p) => p.tags?.join(', ') ?? <span className="muted">{t.common.none}</span> },
      statusColumn(),
    ],
    dependants: (p) => ({ resource: 'process', record: p }),
    form: {
      id: 'process', fields: Object.keys(initial(null)), initial, create: body, update: body,
      controls: (props) => <ProcessControls {...props} processes={processes} folders={folders} foldersFailed={foldersFailed} />,
    },
  };
  return <CataloguePage catalogue={catalogue} />;
}

function ProcessControls({ record, form, processes, folders, foldersFailed }: FieldsProps<Process, ProcessValues> & ReturnType<typeof useLists>) {
  const number = (id: 'timeout_seconds' | 'max_retries' | 'retry_delay_seconds' | 'sla_deadline_minutes', label: string, hint: string) => <NumberField form={form} id={id} label={label} hint={hint} />;
  return (
    <>
      <OptionsFailed failed={foldersFailed} />
      <div className="form-grid">
        <NameField form={form} />
        <DescriptionField form={form} />
        <RecordSelect form={form} id="folder_id" label={t.processes.folder} none={t.processes.noFolder} records={folders} />
        <TextField form={form} id="release_id" label={t.processes.releaseId} hint={t.processes.releaseHint} maxLength={36} spellCheck={false} />
        {number('timeout_seconds', t.processes.timeout, t.processes.timeoutHint)}
        {number('max_retries', t.processes.maxRetries, t.processes.maxRetriesHint)}
        {number('retry_delay_seconds', t.processes.retryDelay, t.processes.retryDelayHint)}
        {number('sla_deadline_minutes', t.processes.sla, t.processes.slaHint)}
        <RecordSelect form={form} id="on_success_trigger_process_id" label={t.processes.onSuccess} none={t.common.none}
          records={processes.filter((p) => p.id !== record?.id)} />
        <TextField form={form} id="tags" label={t.processes.tags} hint={t.catalogue.listHint} />
        <TextField form={form} id="required_assets" label={t.processes.requiredAssets} hint={t.processes.requiredAssetsHint} />
      </div>
      <SchemaEditor value={form.form.input_schema} error={form.errors.fields.input_schema} control={{ ...form.input('input_schema', true), onChange: form.set('input_schema') }} />
      <CheckField form={form} id="auto_retry" label={t.processes.autoRetry} />
      <CheckField form={form} id="is_active" label={t.processes.isActive} />
    </>
  );
}
