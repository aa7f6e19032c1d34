import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { AdminTable } from '../components/AdminTable';
import { ActiveCheck, FormActions, NO_ERRORS, describedBy, useAdminForm } from '../components/AdminForm';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field } from '../components/Field';
import { SecretOnce } from '../components/SecretOnce';
import { ErrorState } from '../components/States';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import { ApiError } from '../lib/errors';
import { EVENT_TYPES, eventTypesBody, type Webhook, type WebhookWithSecret } from '../lib/events';
import { useSession } from '../session-context';

const FIELDS = ['url', 'event_types', 'description', 'is_active'] as const;

type Pending = { kind: 'rotate' | 'remove'; hook: Webhook };

/**
 * The workspace's webhook subscriptions (admins; every route of them is an admin one): list,
 * create and rotate with the signing secret shown once, edit, disable/enable, send a test,
 * delete, and a link to each one's delivery log.
 */
export function WebhooksPage() {
  const { api } = useSession();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<Webhook | 'new' | null>(null);
  const [secret, setSecret] = useState<{ title: string; value: string } | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [dialogError, setDialogError] = useState<string | null>(null);
  const [rowError, setRowError] = useState<string | null>(null);
  const [testSent, setTestSent] = useState<{ hook: Webhook; deliveryId: string } | null>(null);

  const hooks = useQuery({ queryKey: ['webhooks'], queryFn: () => api.request('listWorkspaceWebhooks', { query: { limit: 100 } }) });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['webhooks'] });
  const say = (text: string) => { setNotice(text); setRowError(null); };
  const failed = (err: unknown) => { setNotice(null); setRowError(err instanceof ApiError ? err.message : t.common.unexpectedError); };

  const confirm = useMutation({
    mutationFn: ({ kind, hook }: Pending) => kind === 'rotate'
      ? api.request('rotateWebhookSecret', { path: { id: hook.id } })
      : api.request('deleteWebhook', { path: { id: hook.id } }),
    onSuccess: ({ data }, { kind, hook }) => {
      setPending(null);
      setDialogError(null);
      if (kind === 'rotate') {
        setSecret({ title: t.webhooks.secretRotatedTitle(hook.url), value: (data as WebhookWithSecret).secret });
        setNotice(null);
      } else {
        say(t.webhooks.removed(hook.url));
      }
      void refresh();
    },
    onError: (err) => setDialogError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });

  const toggle = useMutation({
    mutationFn: (hook: Webhook) => api.request('updateWebhook', { path: { id: hook.id }, body: { is_active: !hook.is_active } }),
    onSuccess: ({ data }) => { say(data.is_active ? t.webhooks.enabledNotice(data.url) : t.webhooks.disabledNotice(data.url)); void refresh(); },
    onError: failed,
  });

  const test = useMutation({
    mutationFn: (hook: Webhook) => api.request('testWebhook', { path: { id: hook.id } }),
    onSuccess: ({ data }, hook) => {
      say(t.webhooks.testQueued(hook.url));
      setTestSent({ hook, deliveryId: data.id });
      void queryClient.invalidateQueries({ queryKey: ['webhook-deliveries', hook.id] });
    },
    onError: failed,
  });

  const ask = (kind: Pending['kind'], hook: Webhook) => { setDialogError(null); setPending({ kind, hook }); };

  return (
    <>
      <div className="title-row">
        <h1>{t.webhooks.title}</h1>
        {editing === null && <button type="button" onClick={() => { setEditing('new'); setSecret(null); setNotice(null); }}>{t.webhooks.newWebhook}</button>}
      </div>
      <p className="muted">{t.webhooks.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>
      {rowError && <p className="form-error" role="alert">{rowError}</p>}

      {testSent && <TestResult key={testSent.deliveryId} hook={testSent.hook} deliveryId={testSent.deliveryId} onDone={() => setTestSent(null)} />}
      {secret && <SecretOnce title={secret.title} secret={secret.value} texts={t.webhooks.secretTexts} onDone={() => setSecret(null)} />}
      {editing !== null && (
        <WebhookForm
          key={editing === 'new' ? 'new' : editing.id}
          hook={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onCreated={(created) => { setEditing(null); setSecret({ title: t.webhooks.secretTitle(created.url), value: created.secret }); void refresh(); }}
          onSaved={() => { setEditing(null); say(t.webhooks.saved); void refresh(); }}
        />
      )}

      <AdminTable
        query={hooks}
        caption={t.webhooks.caption}
        className="webhooks"
        empty={t.webhooks.empty}
        head={<>
          <th scope="col">{t.webhooks.url}</th>
          <th scope="col">{t.webhooks.types}</th>
          <th scope="col">{t.webhooks.secretPrefix}</th>
          <th scope="col">{t.webhooks.state}</th>
          <th scope="col">{t.webhooks.created}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(hook) => (
          <tr key={hook.id} data-webhook={hook.url}>
            <th scope="row" className="wrap"><code>{hook.url}</code>{hook.description && <><br /><span className="muted small">{hook.description}</span></>}</th>
            <td>{hook.event_types.includes('*')
              ? <span className="muted">{t.webhooks.allTypesShort}</span>
              : <ul className="chips">{hook.event_types.map((type) => <li key={type}><code>{type}</code></li>)}</ul>}</td>
            <td><code>{hook.secret_prefix}…</code></td>
            <td>
              <span className={`badge ${hook.is_active ? 'badge-completed' : 'badge-stopped'}`} data-state={hook.is_active ? 'active' : 'disabled'}>
                {hook.is_active ? t.webhooks.active : t.webhooks.disabled}
              </span>
              {hook.failing_since && <><br /><span className="small">{t.webhooks.failingSince} <Time iso={hook.failing_since} /></span></>}
              {hook.disabled_reason && <><br /><span className="muted small">{t.webhooks.disabledReason(hook.disabled_reason)}</span></>}
            </td>
            <td><Time iso={hook.created_at} /></td>
            <td><div className="row-actions" role="group" aria-label={t.webhooks.actionsLabel(hook.url)}>
              <Link className="button-link secondary" to={`/webhooks/${hook.id}/deliveries`} aria-label={t.webhooks.deliveriesLabel(hook.url)}>{t.webhooks.deliveries}</Link>
              <button type="button" className="secondary" aria-label={t.webhooks.testLabel(hook.url)} disabled={test.isPending}
                onClick={() => test.mutate(hook)}>{t.webhooks.test}</button>
              <button type="button" className="secondary" aria-label={t.webhooks.editLabel(hook.url)}
                onClick={() => { setEditing(hook); setNotice(null); }}>{t.admin.edit}</button>
              <button type="button" className="secondary" disabled={toggle.isPending}
                aria-label={hook.is_active ? t.webhooks.disableLabel(hook.url) : t.webhooks.enableLabel(hook.url)}
                onClick={() => toggle.mutate(hook)}>{hook.is_active ? t.webhooks.disable : t.webhooks.enable}</button>
              <button type="button" className="secondary" aria-label={t.webhooks.rotateLabel(hook.url)} onClick={() => ask('rotate', hook)}>{t.webhooks.rotate}</button>
              <button type="button" className="danger" aria-label={t.webhooks.removeLabel(hook.url)} onClick={() => ask('remove', hook)}>{t.webhooks.remove}</button>
            </div></td>
          </tr>
        )}
      />

      <ConfirmDialog
        open={pending !== null}
        title={pending ? (pending.kind === 'rotate' ? t.webhooks.rotateTitle(pending.hook.url) : t.webhooks.removeTitle(pending.hook.url)) : ''}
        confirmLabel={pending?.kind === 'rotate' ? t.webhooks.rotate : t.webhooks.remove}
        danger={pending?.kind === 'remove'}
        busy={confirm.isPending}
        error={dialogError}
        onConfirm={() => pending && confirm.mutate(pending)}
        onCancel={() => setPending(null)}
      >
        <p>{pending?.kind === 'rotate' ? t.webhooks.rotateBody : t.webhooks.removeBody}</p>
      </ConfirmDialog>
    </>
  );
}

/** Read again while the test is pending: a deliverer takes it at its next pass. */
const TEST_POLL_MS = 1000;

/**
 * The result of a test delivery, followed until it is delivered or failed. The API has no read of
 * one delivery, so it is found on the first page of the subscription's log (newest first, where a
 * delivery just queued is).
 */
function TestResult({ hook, deliveryId, onDone }: { hook: Webhook; deliveryId: string; onDone(): void }) {
  const { api } = useSession();
  const log = useQuery({
    queryKey: ['webhook-deliveries', hook.id, 'test', deliveryId],
    queryFn: () => api.request('listWebhookDeliveries', { path: { id: hook.id }, query: { limit: 20 } }),
    refetchInterval: (q) => (q.state.data?.data.find((d) => d.id === deliveryId)?.status === 'pending' ? TEST_POLL_MS : false),
  });
  const d = log.data?.data.find((x) => x.id === deliveryId);
  const text = !d ? t.common.loading
    : d.status === 'delivered' ? t.webhooks.testDelivered(d.last_status_code, d.last_duration_ms)
    : d.status === 'failed' ? t.webhooks.testFailed(d.last_status_code, d.last_error)
    : d.last_error ? `${t.webhooks.testPending(d.attempts)} ${d.last_error}` : t.webhooks.testPending(d.attempts);
  return (
    <section className="card wide" aria-labelledby="test-result-title" data-test-result={d?.status ?? 'loading'}>
      <h2 id="test-result-title">{t.webhooks.testResultTitle(hook.url)}</h2>
      <div role="status" aria-live="polite">
        {d && <span className={`badge badge-${d.status}`}>{t.deliveries.statuses[d.status]}</span>} <span>{text}</span>
      </div>
      {log.isError && <ErrorState error={log.error} onRetry={() => void log.refetch()} />}
      <button type="button" className="secondary" onClick={onDone}>{t.common.close}</button>
    </section>
  );
}

function WebhookForm({ hook, onCancel, onCreated, onSaved }: {
  hook: Webhook | null;
  onCancel(): void;
  onCreated(created: WebhookWithSecret): void;
  onSaved(): void;
}) {
  const { api } = useSession();
  const { form, setForm, errors, setErrors, set, input } = useAdminForm(() => ({
    url: hook?.url ?? '',
    description: hook?.description ?? '',
    all: hook ? hook.event_types.includes('*') : true,
    types: new Set<string>(hook?.event_types.filter((type) => type !== '*') ?? []),
    is_active: hook?.is_active ?? true,
  }));

  const save = useMutation({
    mutationFn: async () => {
      const body = {
        url: form.url.trim(),
        event_types: eventTypesBody(form.all, form.types),
        description: form.description.trim() || null,
        is_active: form.is_active,
      };
      if (hook) {
        await api.request('updateWebhook', { path: { id: hook.id }, body });
        return null;
      }
      return (await api.request('createWebhook', { body })).data;
    },
    onSuccess: (created) => (created ? onCreated(created) : onSaved()),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    save.mutate();
  }

  const tick = (type: string, on: boolean) => setForm((f) => {
    const types = new Set(f.types);
    if (on) types.add(type);
    else types.delete(type);
    return { ...f, types };
  });
  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="webhook-form-title">
      <h2 id="webhook-form-title">{hook ? t.webhooks.editTitle : t.webhooks.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      <Field id="url" label={t.webhooks.url} hint={t.webhooks.urlHint} error={fe.url}>
        <input {...input('url', true)} type="url" inputMode="url" value={form.url} maxLength={2000} spellCheck={false} onChange={set('url')} autoFocus />
      </Field>
      <Field id="description" label={t.webhooks.description} hint={t.webhooks.descriptionHint} error={fe.description}>
        <input {...input('description', true)} value={form.description} maxLength={2000} onChange={set('description')} />
      </Field>
      <fieldset aria-describedby={describedBy('event_types', false, !!fe.event_types)} aria-invalid={!!fe.event_types}>
        <legend>{t.webhooks.typesLegend}</legend>
        <label className="check">
          <input type="checkbox" checked={form.all} onChange={(e) => setForm((f) => ({ ...f, all: e.target.checked }))} />
          <span>{t.webhooks.allTypes}</span>
        </label>
        {!form.all && (
          <div className="scope-groups">
            {EVENT_TYPES.map((type) => (
              <label key={type} className="check">
                <input type="checkbox" checked={form.types.has(type)} value={type} onChange={(e) => tick(type, e.target.checked)} />
                <span><code>{type}</code> — {t.eventTypes[type]}</span>
              </label>
            ))}
          </div>
        )}
        {fe.event_types && <span className="field-error" id="event_types-error">{fe.event_types}</span>}
      </fieldset>
      <ActiveCheck checked={form.is_active} label={t.webhooks.isActive} onChange={(on) => setForm((f) => ({ ...f, is_active: on }))} />
      {hook
        ? <FormActions saving={save.isPending} onCancel={onCancel} />
        : (
          <div className="form-actions">
            <button type="submit" disabled={save.isPending}>{save.isPending ? t.webhooks.creating : t.webhooks.create}</button>
            <button type="button" className="secondary" onClick={onCancel}>{t.common.cancel}</button>
          </div>
        )}
    </form>
  );
}
