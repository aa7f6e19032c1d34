import { useState, type FormEvent } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ActiveCheck, FormActions, NO_ERRORS, useAdminForm } from '../components/AdminForm';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { MachineCharts } from '../charts/SeriesCharts';
import { DataTable } from '../components/DataTable';
import { Dependants } from '../components/Dependants';
import { DeactivateDialog, useDeactivation } from '../components/Deactivation';
import { Field } from '../components/Field';
import { SecretOnce } from '../components/SecretOnce';
import { Empty, ErrorState, Loading } from '../components/States';
import { StatusBadge } from '../components/StatusBadge';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import { numberOrText } from '../lib/catalogue';
import { ApiError } from '../lib/errors';
import { formatCount } from '../lib/format';
import { FASTEST_REFRESH_MS } from '../lib/refresh';
import type { BodyOf } from '@svc/client';
import { ENVIRONMENTS, type Machine, type MachineWithKey } from '../lib/api';
import { useIsAdmin, useSession } from '../session-context';

const FIELDS = ['name', 'description', 'slots', 'kind', 'is_active', 'environments'] as const;
const KINDS = ['unattended', 'attended'] as const satisfies ReadonlyArray<Machine['kind']>;

/**
 * Every machine of the workspace, active or not: status, slots, last heartbeat, kind; reads again
 * by itself. Admins create one (its agent's key shown once), edit it, rotate its key (the new one
 * shown once) and deactivate it, seeing first what names it.
 */
export function MachinesPage() {
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<Machine | 'new' | null>(null);
  const [secret, setSecret] = useState<{ title: string; key: string } | null>(null);
  const [rotating, setRotating] = useState<Machine | null>(null);
  const [rotateError, setRotateError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const machines = useQuery({
    queryKey: ['machines', 'all'],
    queryFn: () => api.request('listWorkspaceMachines', { query: { limit: 100 } }),
    refetchInterval: FASTEST_REFRESH_MS,
    placeholderData: keepPreviousData,
  });
  const refresh = () => Promise.all([
    queryClient.invalidateQueries({ queryKey: ['machines'] }),
    queryClient.invalidateQueries({ queryKey: ['options', 'machines'] }),
  ]);
  const deactivation = useDeactivation<Machine>((id) => api.request('deactivateMachine', { path: { id } }), (m) => { setNotice(t.machinesAdmin.deactivated(m.name)); void refresh(); });
  const rotate = useMutation({
    mutationFn: (m: Machine) => api.request('rotateMachineKey', { path: { id: m.id } }),
    onSuccess: ({ data }) => {
      setRotating(null);
      setSecret({ title: t.machinesAdmin.keyRotatedTitle(data.name), key: data.machine_key });
      setNotice(null);
    },
    onError: (err) => setRotateError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });

  return (
    <>
      <div className="title-row">
        <h1>{t.machines.title}</h1>
        {isAdmin && editing === null && <button type="button" onClick={() => { setEditing('new'); setSecret(null); setNotice(null); }}>{t.machinesAdmin.newMachine}</button>}
      </div>
      <p className="muted small">{t.machines.autoRefresh}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {secret && <SecretOnce title={secret.title} secret={secret.key} onDone={() => setSecret(null)} />}
      {editing !== null && (
        <MachineForm key={editing === 'new' ? 'new' : editing.id} machine={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={(m) => {
            setEditing(null);
            // a new machine's key is in its answer, this once
            if ('machine_key' in m) setSecret({ title: t.machinesAdmin.keyTitle(m.name), key: m.machine_key });
            else setNotice(t.machinesAdmin.saved(m.name));
            void refresh();
          }} />
      )}

      {machines.isPending ? <Loading />
        : machines.isError ? <ErrorState error={machines.error} onRetry={() => void machines.refetch()} />
        : machines.data.data.length === 0 ? <Empty>{t.machines.none}</Empty>
        : (
          <>
            <MachineCharts every={FASTEST_REFRESH_MS} />
            <DataTable
              caption={t.machines.list}
              className="machines"
              head={<>
                <th scope="col">{t.machines.name}</th>
                <th scope="col">{t.machines.status}</th>
                <th scope="col" className="num">{t.machines.slots}</th>
                <th scope="col">{t.machines.heartbeat}</th>
                <th scope="col">{t.machines.kind}</th>
                <th scope="col">{t.machines.active}</th>
                <th scope="col">{t.machines.agent}</th>
                {isAdmin && <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>}
              </>}
              rows={machines.data.data}
              row={(m) => (
                <tr key={m.id} data-machine={m.name}>
                  <th scope="row">{m.name}{m.description && <span className="muted small block">{m.description}</span>}</th>
                  <td data-cell="status"><StatusBadge kind="machine" status={m.status} /></td>
                  <td className="num" data-cell="slots">{t.machines.slotsValue(m.running_jobs, m.slots)}</td>
                  <td><Time iso={m.last_heartbeat_at} /></td>
                  <td data-cell="kind">{m.kind ? t.machines.kinds[m.kind] ?? m.kind : t.common.none}</td>
                  <td data-cell="active">{m.is_active ? t.common.yes : t.common.no}</td>
                  <td className="small">{m.agent_version ?? t.common.none}</td>
                  {isAdmin && (
                    <td><div className="row-actions">
                      <button type="button" className="secondary" aria-label={t.machinesAdmin.editLabel(m.name)} onClick={() => { setEditing(m); setNotice(null); }}>{t.admin.edit}</button>
                      {m.is_active && (
                        <>
                          <button type="button" className="secondary" aria-label={t.machinesAdmin.rotateLabel(m.name)} onClick={() => { setRotateError(null); setRotating(m); }}>{t.machinesAdmin.rotate}</button>
                          <button type="button" className="danger" aria-label={t.machinesAdmin.deactivateLabel(m.name)} onClick={() => deactivation.ask(m)}>{t.admin.deactivate}</button>
                        </>
                      )}
                    </div></td>
                  )}
                </tr>
              )}
            />
            {(machines.data.meta?.total ?? 0) > machines.data.data.length && (
              <p className="muted">{t.machines.total(formatCount(machines.data.meta!.total, t.locale))}</p>
            )}
          </>
        )}

      <ConfirmDialog open={rotating !== null} title={rotating ? t.machinesAdmin.rotateTitle(rotating.name) : ''} confirmLabel={t.machinesAdmin.rotate}
        danger busy={rotate.isPending} error={rotateError} onConfirm={() => rotating && rotate.mutate(rotating)} onCancel={() => setRotating(null)}>
        <p>{t.machinesAdmin.rotateBody}</p>
      </ConfirmDialog>
      <DeactivateDialog deactivation={deactivation} title={(m) => t.machinesAdmin.deactivateTitle(m.name)}>
        <p>{t.machinesAdmin.deactivateBody}</p>
        {deactivation.pending && <Dependants resource="machine" record={deactivation.pending} />}
      </DeactivateDialog>
    </>
  );
}

function MachineForm({ machine, onCancel, onSaved }: { machine: Machine | null; onCancel(): void; onSaved(m: Machine | MachineWithKey): void }) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    name: machine?.name ?? '',
    description: machine?.description ?? '',
    slots: String(machine?.slots ?? 1),
    kind: machine?.kind ?? 'unattended',
    is_active: machine?.is_active ?? true,
  }));
  const [environments, setEnvironments] = useState<Set<string>>(new Set(machine?.environments ?? []));
  const save = useMutation({
    mutationFn: async (body: Record<string, unknown>): Promise<Machine | MachineWithKey> => machine
      ? (await api.request('updateMachine', { path: { id: machine.id }, body: body as BodyOf<'updateMachine'> })).data
      : (await api.request('createMachine', { body: body as BodyOf<'createMachine'> })).data,
    onSuccess: onSaved,
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    save.mutate({
      name: form.name.trim(),
      description: form.description.trim() || null,
      slots: numberOrText(form.slots),
      kind: form.kind,
      is_active: form.is_active,
      environments: environments.size > 0 ? ENVIRONMENTS.filter((e) => environments.has(e)) : null,
    });
  }
  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="machine-form-title">
      <h2 id="machine-form-title">{machine ? t.machinesAdmin.editTitle(machine.name) : t.machinesAdmin.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      <div className="form-grid">
        <Field id="name" label={t.admin.name} hint={t.catalogue.nameHint} error={fe.name}>
          <input {...input('name', true)} value={form.name} maxLength={100} onChange={set('name')} autoFocus />
        </Field>
        <Field id="description" label={t.catalogue.description} error={fe.description}>
          <input {...input('description')} value={form.description} maxLength={2000} onChange={set('description')} />
        </Field>
        <Field id="slots" label={t.machinesAdmin.slots} hint={t.machinesAdmin.slotsHint} error={fe.slots}>
          <input {...input('slots', true)} type="number" inputMode="numeric" value={form.slots} onChange={set('slots')} />
        </Field>
        <Field id="kind" label={t.machines.kind} hint={t.machinesAdmin.kindHint} error={fe.kind}>
          <select {...input('kind', true)} value={form.kind} onChange={set('kind')}>
            {KINDS.map((k) => <option key={k} value={k}>{t.machines.kinds[k]}</option>)}
          </select>
        </Field>
      </div>
      <fieldset aria-describedby={['machine-environments-hint', fe.environments && 'machine-environments-error'].filter(Boolean).join(' ')}>
        <legend>{t.machinesAdmin.environmentsLegend}</legend>
        {ENVIRONMENTS.map((env) => (
          <label key={env} className="check">
            <input type="checkbox" checked={environments.has(env)} onChange={(e) => setEnvironments((cur) => {
              const next = new Set(cur);
              if (e.target.checked) next.add(env);
              else next.delete(env);
              return next;
            })} />
            <span>{t.apiKeys.environmentNames[env]}</span>
          </label>
        ))}
        <span className="hint" id="machine-environments-hint">{t.machinesAdmin.environmentsHint}</span>
        {fe.environments && <span className="field-error" id="machine-environments-error">{fe.environments}</span>}
      </fieldset>
      <ActiveCheck checked={form.is_active} label={t.machinesAdmin.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      <FormActions saving={save.isPending} onCancel={onCancel} />
    </form>
  );
}
