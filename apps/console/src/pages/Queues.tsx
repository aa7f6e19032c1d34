import { Link } from 'react-router';
import { useQuery } from '@tanstack/react-query';
import { CataloguePage, statusColumn } from '../components/CataloguePage';
import { CheckField, DescriptionField, NameField, NumberField, OptionsFailed, RecordSelect } from '../components/CatalogueFields';
import { Field } from '../components/Field';
import { t } from '../i18n';
import type { Queue } from '../lib/api';
import type { Catalogue, FieldsProps } from '../lib/catalogue-page';
import { formatCount } from '../lib/format';
import { formReader } from '../lib/form-reading';
import { useSession } from '../session-context';
import { useCatalogueOptions, type CatalogueOptions } from './catalogue-options';

type QueueValues = ReturnType<typeof initial>;

const initial = (q: Queue | null) => ({
  name: q?.name ?? '',
  description: q?.description ?? '',
  max_retries: String(q?.max_retries ?? 3),
  consumer_process_id: q?.consumer_process_id ?? '',
  max_consumers: String(q?.max_consumers ?? 1),
  is_paused: q?.is_paused ?? false,
  is_active: q?.is_active ?? true,
  retention_completed_days: String(q?.retention_completed_days ?? 30),
  retention_failed_days: String(q?.retention_failed_days ?? 90),
  retention_action: q?.retention_action ?? 'delete',
  unique_references: q?.unique_references ?? false,
});

function body(v: QueueValues) {
  const read = formReader();
  return read.body({
    name: v.name.trim(),
    description: v.description.trim() || null,
    max_retries: read.integer('max_retries', v.max_retries),
    consumer_process_id: v.consumer_process_id || null,
    max_consumers: read.integer('max_consumers', v.max_consumers),
    is_paused: v.is_paused,
    is_active: v.is_active,
    retention_completed_days: read.decimal('retention_completed_days', v.retention_completed_days),
    retention_failed_days: read.decimal('retention_failed_days', v.retention_failed_days),
    retention_action: v.retention_action,
    unique_references: v.unique_references,
  });
}

/**
 * The queues' settings: every member sees them, with links to each queue's items and triggers;
 * admins create, edit every field and deactivate. (The items are the queue's own page.)
 */
export function QueuesPage() {
  const { api } = useSession();
  const options = useCatalogueOptions();
  const triggers = useQuery({ queryKey: ['triggers'], queryFn: () => api.request('listWorkspaceQueueTriggers', { query: { limit: 100 } }) });
  const triggerCount = (queueId: string) => triggers.data?.data.filter((tr) => tr.queue_id === queueId && tr.is_active).length ?? 0;
  const catalogue: Catalogue<Queue, QueueValues, 'createQueue', 'updateQueue'> = {
    queryKey: ['queues', 'settings'],
    // a queue saved with a consumer process gets its default trigger
    refreshes: [['queues'], ['options', 'queues'], ['triggers']],
    list: (api) => api.request('listWorkspaceQueues', { query: { limit: 100 } }),
    create: (api, body) => api.request('createQueue', { body }),
    update: (api, id, body) => api.request('updateQueue', { path: { id }, body }),
    deactivate: (api, id) => api.request('deactivateQueue', { path: { id } }),
    texts: { ...t.queues, newRecord: t.queues.newQueue },
    label: (q) => q.name,
    className: 'queues',
    rowData: (q) => ({ 'data-queue': q.name }),
    columns: [
      { header: t.admin.name, cell: (q) => <><Link to={`/queues/${q.id}`} aria-label={t.queues.itemsLink(q.name)}>{q.name}</Link>{q.description && <span className="muted small block">{q.description}</span>}</> },
      { header: t.queues.consumer, cell: (q) => (q.consumer_process_id ? options.processName(q.consumer_process_id) : <span className="muted">{t.queues.noConsumer}</span>) },
      { header: t.queues.maxConsumers, num: true, cell: (q) => q.max_consumers },
      { header: t.queues.maxRetries, num: true, cell: (q) => q.max_retries },
      { header: t.queues.items, num: true, cell: (q) => formatCount(q.item_counts.total, t.locale) },
      { header: t.adminNav.triggers, cell: (q) => <Link to={`/triggers?queue_id=${q.id}`} aria-label={t.queues.triggersLabel(triggerCount(q.id), q.name)}>{t.queues.triggersLink(triggerCount(q.id))}</Link> },
      statusColumn((q) => q.is_paused && <> <span className="badge" data-paused="">{t.queues.paused}</span></>),
    ],
    dependants: (q) => ({ resource: 'queue', record: q, openItems: q.item_counts.new + q.item_counts.in_progress + q.item_counts.pending_review }),
    form: { id: 'queue', fields: Object.keys(initial(null)), initial, create: body, update: body, controls: (props) => <QueueControls {...props} options={options} /> },
  };
  return <CataloguePage catalogue={catalogue} />;
}

function QueueControls({ form, options }: FieldsProps<Queue, QueueValues> & { options: CatalogueOptions }) {
  const { form: values, set, input, errors: { fields: fe } } = form;
  const days = (id: 'retention_completed_days' | 'retention_failed_days', label: string) => (
    <Field id={id} label={label} hint={t.queues.retentionDaysHint} error={fe[id]}>
      <input {...input(id, true)} inputMode="decimal" value={values[id]} onChange={set(id)} />
    </Field>
  );
  return (
    <>
      <OptionsFailed failed={options.failed} />
      <div className="form-grid">
        <NameField form={form} />
        <DescriptionField form={form} />
        <RecordSelect form={form} id="consumer_process_id" label={t.queues.consumer} none={t.queues.noConsumer} records={options.processes} />
        <NumberField form={form} id="max_consumers" label={t.queues.maxConsumers} hint={t.queues.maxConsumersHint} />
        <NumberField form={form} id="max_retries" label={t.queues.maxRetries} hint={t.queues.maxRetriesHint} />
      </div>
      <fieldset className="form-grid">
        <legend>{t.queues.retention}</legend>
        {days('retention_completed_days', t.queues.retentionCompletedDays)}
        {days('retention_failed_days', t.queues.retentionFailedDays)}
        <Field id="retention_action" label={t.queues.retentionAction} hint={t.queues.retentionActionHint} error={fe.retention_action}>
          <select {...input('retention_action')} value={values.retention_action} onChange={set('retention_action')}>
            <option value="delete">{t.queues.retentionDelete}</option>
            <option value="archive">{t.queues.retentionArchive}</option>
          </select>
        </Field>
      </fieldset>
      <CheckField form={form} id="unique_references" label={t.queues.uniqueReferences} />
      <CheckField form={form} id="is_paused" label={t.queues.isPaused} />
      <CheckField form={form} id="is_active" label={t.queues.isActive} />
    </>
  );
}
