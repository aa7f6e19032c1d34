import { useState } from 'react';
import { MachineCharts } from '../charts/SeriesCharts';
import { CataloguePage } from '../components/CataloguePage';
import { CheckField, DescriptionField, EnvironmentsField, NameField, NumberField } from '../components/CatalogueFields';
import { Field } from '../components/Field';
import { RotateKeyDialog, useKeyRotation } from '../components/KeyRotation';
import { SecretOnce } from '../components/SecretOnce';
import { StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { ENVIRONMENTS, type Machine } from '../lib/api';
import type { Catalogue, FieldsProps } from '../lib/catalogue-page';
import { formatCount } from '../lib/format';
import { formReader } from '../lib/form-reading';
import { FASTEST_REFRESH_MS } from '../lib/refresh';

type MachineValues = ReturnType<typeof initial>;
const KINDS = ['unattended', 'attended'] satisfies ReadonlyArray<Machine['kind']>;

const initial = (m: Machine | null) => ({
  name: m?.name ?? '',
  description: m?.description ?? '',
  slots: String(m?.slots ?? 1),
  kind: m?.kind ?? 'unattended',
  is_active: m?.is_active ?? true,
  environments: m?.environments ?? [],
});

function body(v: MachineValues) {
  const read = formReader();
  const environments = ENVIRONMENTS.filter((e) => v.environments.includes(e));
  return read.body({
    name: v.name.trim(),
    description: v.description.trim() || null,
    slots: read.integer('slots', v.slots),
    kind: v.kind,
    is_active: v.is_active,
    environments: environments.length > 0 ? environments : null,
  });
}

/**
 * Every machine of the workspace, active or not: status, slots, last heartbeat, kind; reads again
 * by itself. Admins create one (its agent's key shown once), edit it, rotate its key (the new one
 * shown once) and deactivate it, seeing first what names it.
 */
export function MachinesPage() {
  const [secret, setSecret] = useState<{ title: string; key: string } | null>(null);
  const notice = useState<string | null>(null);
  const [, setNotice] = notice;
  const rotation = useKeyRotation((m) => { setSecret({ title: t.machinesAdmin.keyRotatedTitle(m.name), key: m.machine_key }); setNotice(null); });
  const catalogue: Catalogue<Machine, MachineValues, 'createMachine', 'updateMachine'> = {
    queryKey: ['machines', 'all'],
    refreshes: [['machines'], ['options', 'machines']],
    refetchEvery: FASTEST_REFRESH_MS,
    list: (api) => api.request('listWorkspaceMachines', { query: { limit: 100 } }),
    create: (api, body) => api.request('createMachine', { body }),
    update: (api, id, body) => api.request('updateMachine', { path: { id }, body }),
    deactivate: (api, id) => api.request('deactivateMachine', { path: { id } }),
    texts: { ...t.machinesAdmin, title: t.machines.title, intro: t.machines.autoRefresh, caption: t.machines.list, empty: t.machines.none, newRecord: t.machinesAdmin.newMachine },
    introIsNote: true,
    moreRows: (_shown, total) => t.machines.total(formatCount(total, t.locale)),
    label: (m) => m.name,
    className: 'machines',
    rowData: (m) => ({ 'data-machine': m.name }),
    columns: [
      { header: t.machines.name, cell: (m) => <>{m.name}{m.description && <span className="muted small block">{m.description}</span>}</> },
      { header: t.machines.status, data: { 'data-cell': 'status' }, cell: (m) => <StatusBadge kind="machine" status={m.status} /> },
      { header: t.machines.slots, num: true, data: { 'data-cell': 'slots' }, cell: (m) => t.machines.slotsValue(m.running_jobs, m.slots) },
      { header: t.machines.heartbeat, cell: (m) => <Time iso={m.last_heartbeat_at} /> },
      { header: t.machines.kind, data: { 'data-cell': 'kind' }, cell: (m) => (m.kind ? t.machines.kinds[m.kind] ?? m.kind : t.common.none) },
      { header: t.machines.active, data: { 'data-cell': 'active' }, cell: (m) => (m.is_active ? t.common.yes : t.common.no) },
      { header: t.machines.agent, className: 'small', cell: (m) => m.agent_version ?? t.common.none },
    ],
    adminColumn: true,
    activeActions: (m) => <button type="button" className="secondary" aria-label={t.machinesAdmin.rotateLabel(m.name)} onClick={() => rotation.ask(m)}>{t.machinesAdmin.rotate}</button>,
    dependants: (m) => ({ resource: 'machine', record: m }),
    form: { id: 'machine', fields: Object.keys(initial(null)), initial, create: body, update: body, controls: machineControls },
    notice,
    onNew: () => setSecret(null),
    // a new machine's key is in its answer, this once
    onSaved: (m) => {
      if (!('machine_key' in m) || typeof m.machine_key !== 'string') return t.machinesAdmin.saved(m.name);
      setSecret({ title: t.machinesAdmin.keyTitle(m.name), key: m.machine_key });
      return null;
    },
    parts: {
      aboveForm: secret && <SecretOnce title={secret.title} secret={secret.key} onDone={() => setSecret(null)} />,
      aboveTable: <MachineCharts every={FASTEST_REFRESH_MS} />,
      dialogs: <RotateKeyDialog rotation={rotation} />,
    },
  };
  return <CataloguePage catalogue={catalogue} />;
}

function machineControls({ form }: FieldsProps<Machine, MachineValues>) {
  const { form: values, setForm, set, input, errors: { fields: fe } } = form;
  return (
    <>
      <div className="form-grid">
        <NameField form={form} />
        <DescriptionField form={form} />
        <NumberField form={form} id="slots" label={t.machinesAdmin.slots} hint={t.machinesAdmin.slotsHint} />
        <Field id="kind" label={t.machines.kind} hint={t.machinesAdmin.kindHint} error={fe.kind}>
          <select {...input('kind', true)} value={values.kind} onChange={set('kind')}>
            {KINDS.map((k) => <option key={k} value={k}>{t.machines.kinds[k]}</option>)}
          </select>
        </Field>
      </div>
      <EnvironmentsField value={values.environments} error={fe.environments} onChange={(environments) => setForm((f) => ({ ...f, environments }))} />
      <CheckField form={form} id="is_active" label={t.machinesAdmin.isActive} />
    </>
  );
}
