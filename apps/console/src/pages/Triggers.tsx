import { Link, useSearchParams } from 'react-router';
import type { BodyOf } from '@svc/client';
import { CataloguePage, statusColumn } from '../components/CataloguePage';
import { CheckField, MachineField, NumberField, OptionsFailed, ProcessField } from '../components/CatalogueFields';
import { Field } from '../components/Field';
import { t } from '../i18n';
import type { Trigger } from '../lib/api';
import type { Catalogue, FieldsProps, Reading } from '../lib/catalogue-page';
import { formatCount } from '../lib/format';
import { formReader } from '../lib/form-reading';
import { useCatalogueOptions, type CatalogueOptions } from './catalogue-options';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type TriggerValues = ReturnType<typeof initial>;

const initial = (tr: Trigger | null) => ({
  queue_id: tr?.queue_id ?? '',
  process_id: tr?.process_id ?? '',
  machine_id: tr?.machine_id ?? '',
  max_concurrent_jobs: String(tr?.max_concurrent_jobs ?? 1),
  min_items_to_start: String(tr?.min_items_to_start ?? 1),
  is_active: tr?.is_active ?? true,
});

/** What create and update both send: a trigger's queue is fixed once it is created. */
function body(v: TriggerValues) {
  const read = formReader();
  return read.body({
    process_id: v.process_id,
    machine_id: v.machine_id || null,
    max_concurrent_jobs: read.integer('max_concurrent_jobs', v.max_concurrent_jobs),
    min_items_to_start: read.integer('min_items_to_start', v.min_items_to_start),
    is_active: v.is_active,
  });
}

function createBody(v: TriggerValues): Reading<BodyOf<'createQueueTrigger'>> {
  const reading = body(v);
  return 'errors' in reading ? reading : { body: { type: 'queue', queue_id: v.queue_id, ...reading.body } };
}

/** Queue triggers: every member sees them; admins create, edit and deactivate. */
export function TriggersPage() {
  const options = useCatalogueOptions({ queues: true });
  // `?queue_id=` (the queues page links here so) shows one queue's triggers; an id that is not a UUID is ignored
  const [params] = useSearchParams();
  const asked = params.get('queue_id');
  const queueId = asked !== null && UUID.test(asked) ? asked : null;
  const catalogue: Catalogue<Trigger, TriggerValues, 'createQueueTrigger', 'updateQueueTrigger'> = {
    queryKey: queueId ? ['triggers', queueId] : ['triggers'],
    refreshes: [['triggers']],
    list: (api) => api.request('listWorkspaceQueueTriggers', { query: queueId ? { limit: 100, queue_id: queueId } : { limit: 100 } }),
    create: (api, body) => api.request('createQueueTrigger', { body }),
    update: (api, id, body) => api.request('updateQueueTrigger', { path: { id }, body }),
    deactivate: (api, id) => api.request('deactivateQueueTrigger', { path: { id } }),
    texts: {
      ...t.triggers,
      newRecord: t.triggers.newTrigger,
      editTitle: () => t.triggers.editTitle,
      deactivated: () => t.triggers.deactivated,
      saved: () => t.triggers.saved,
    },
    // a trigger has no name: its queue tells it apart
    label: (tr) => options.queueName(tr.queue_id),
    className: 'triggers',
    rowData: (tr) => ({ 'data-trigger': options.queueName(tr.queue_id) }),
    columns: [
      { header: t.admin.queue, cell: (tr) => <>{options.queueName(tr.queue_id)}{tr.is_queue_default && <><br /><span className="muted small">{t.triggers.isDefault}</span></>}</> },
      { header: t.admin.process, cell: (tr) => options.processName(tr.process_id) },
      { header: t.admin.machine, cell: (tr) => options.machineName(tr.machine_id) ?? <span className="muted">{t.admin.automaticMachine}</span> },
      { header: t.triggers.maxConcurrent, num: true, cell: (tr) => tr.max_concurrent_jobs },
      { header: t.triggers.minItems, num: true, cell: (tr) => formatCount(tr.min_items_to_start, t.locale) },
      statusColumn(),
    ],
    form: {
      id: 'trigger', fields: Object.keys(initial(null)), initial, create: createBody, update: body,
      controls: (props) => <TriggerControls {...props} options={options} />,
    },
    parts: { underIntro: queueId && <p data-queue-filter="">{t.triggers.onlyQueue(options.queueName(queueId))} <Link to="/triggers">{t.triggers.showAll}</Link></p> },
  };
  return <CataloguePage catalogue={catalogue} />;
}

function TriggerControls({ record, form, options }: FieldsProps<Trigger, TriggerValues> & { options: CatalogueOptions }) {
  const { form: values, set, input, errors: { fields: fe } } = form;
  return (
    <>
      <OptionsFailed failed={options.failed} />
      <div className="form-grid">
        <Field id="queue_id" label={t.admin.queue} hint={record ? t.triggers.queueFixed : undefined} error={fe.queue_id}>
          <select {...input('queue_id', !!record)} value={values.queue_id} onChange={set('queue_id')} disabled={!!record} autoFocus>
            <option value="">{t.admin.choose}</option>
            {options.queues.map((q) => <option key={q.id} value={q.id}>{q.name}</option>)}
          </select>
        </Field>
        <ProcessField processes={options.processes} value={values.process_id} error={fe.process_id} describedBy={input('process_id')['aria-describedby']} onChange={set('process_id')} />
        <MachineField machines={options.machines} value={values.machine_id} error={fe.machine_id} describedBy={input('machine_id')['aria-describedby']} onChange={set('machine_id')} />
        <NumberField form={form} id="max_concurrent_jobs" label={t.triggers.maxConcurrent} hint={t.triggers.maxConcurrentHint} min={1} max={100} />
        <NumberField form={form} id="min_items_to_start" label={t.triggers.minItems} hint={t.triggers.minItemsHint} min={1} max={10000} />
      </div>
      <CheckField form={form} id="is_active" label={t.triggers.isActive} />
    </>
  );
}
