import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { describedBy, NO_ERRORS } from '../components/AdminForm';
import { AdminTable } from '../components/AdminTable';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field } from '../components/Field';
import { SecretOnce } from '../components/SecretOnce';
import { ErrorState, Loading } from '../components/States';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { groupScopes, keyState, localInputToIso, parseIpList, topLevelErrors } from '../lib/admin';
import { ApiError } from '../lib/errors';
import type { FormErrors } from '../lib/errors';
import type { BodyOf } from '@svc/client';
import { ENVIRONMENTS, type ApiKey, type ApiKeyWithSecret } from '../lib/api';
import { useSession } from '../session-context';

const FIELDS = ['name', 'scopes', 'environments', 'allowed_ips', 'expires_at'] as const;

/** The workspace's API keys (admins): list, create with the secret shown once, rotate, revoke. */
export function ApiKeysPage() {
  const { api } = useSession();
  const queryClient = useQueryClient();
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ title: string; key: string } | null>(null);
  const [pending, setPending] = useState<{ kind: 'rotate' | 'revoke'; key: ApiKey } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [dialogError, setDialogError] = useState<string | null>(null);

  const keys = useQuery({ queryKey: ['api-keys'], queryFn: () => api.request('listWorkspaceApiKeys', { query: { limit: 100 } }) });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['api-keys'] });

  const act = useMutation({
    mutationFn: ({ kind, key }: { kind: 'rotate' | 'revoke'; key: ApiKey }) => kind === 'rotate'
      ? api.request('rotateApiKey', { path: { key_id: key.id } })
      : api.request('revokeApiKey', { path: { key_id: key.id } }),
    onSuccess: ({ data }, { kind, key }) => {
      setPending(null);
      setDialogError(null);
      if (kind === 'rotate') {
        setSecret({ title: t.apiKeys.secretRotatedTitle(key.name), key: (data as ApiKeyWithSecret).key });
        setNotice(null);
      } else {
        setNotice(t.apiKeys.revoked(key.name));
      }
      void refresh();
    },
    onError: (err) => setDialogError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });

  return (
    <>
      <div className="title-row">
        <h1>{t.apiKeys.title}</h1>
        {!creating && <button type="button" onClick={() => { setCreating(true); setSecret(null); setNotice(null); }}>{t.apiKeys.newKey}</button>}
      </div>
      <p className="muted">{t.apiKeys.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {secret && <SecretOnce title={secret.title} secret={secret.key} onDone={() => setSecret(null)} />}
      {creating && (
        <CreateKeyForm
          onCancel={() => setCreating(false)}
          onCreated={(created) => { setCreating(false); setSecret({ title: t.apiKeys.secretTitle(created.name), key: created.key }); void refresh(); }}
        />
      )}

      <AdminTable
        query={keys}
        caption={t.apiKeys.caption}
        className="api-keys"
        empty={t.apiKeys.empty}
        head={<>
          <th scope="col">{t.admin.name}</th>
          <th scope="col">{t.apiKeys.prefix}</th>
          <th scope="col">{t.apiKeys.scopes}</th>
          <th scope="col">{t.apiKeys.environments}</th>
          <th scope="col">{t.apiKeys.allowedIps}</th>
          <th scope="col">{t.apiKeys.lastUsed}</th>
          <th scope="col">{t.apiKeys.expires}</th>
          <th scope="col">{t.admin.status}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(key) => {
            const state = keyState(key, new Date());
            return (
              <tr key={key.id} data-key={key.name}>
                <th scope="row">{key.name}</th>
                <td><code>{key.prefix}…</code></td>
                <td><ul className="chips">{key.scopes.map((s) => <li key={s}><code>{s}</code></li>)}</ul></td>
                <td>{key.environments ? key.environments.join(', ') : <span className="muted">{t.apiKeys.allEnvironments}</span>}</td>
                <td className="wrap">{key.allowed_ips ? key.allowed_ips.join(', ') : <span className="muted">{t.apiKeys.anyIp}</span>}</td>
                <td>{key.last_used_at ? <Time iso={key.last_used_at} /> : <span className="muted">{t.common.never}</span>}</td>
                <td>{key.expires_at ? <Time iso={key.expires_at} /> : <span className="muted">{t.apiKeys.neverExpires}</span>}</td>
                <td><span className={`badge badge-key-${state}`} data-state={state}>{t.apiKeys.state[state]}</span></td>
                <td><div className="row-actions">
                  {key.is_active && (
                    <>
                      <button type="button" className="secondary" aria-label={t.apiKeys.rotateLabel(key.name)}
                        onClick={() => { setDialogError(null); setPending({ kind: 'rotate', key }); }}>{t.apiKeys.rotate}</button>
                      <button type="button" className="danger" aria-label={t.apiKeys.revokeLabel(key.name)}
                        onClick={() => { setDialogError(null); setPending({ kind: 'revoke', key }); }}>{t.apiKeys.revoke}</button>
                    </>
                  )}
                </div></td>
              </tr>
            );
        }}
      />

      <ConfirmDialog
        open={pending !== null}
        title={pending ? (pending.kind === 'rotate' ? t.apiKeys.rotateTitle(pending.key.name) : t.apiKeys.revokeTitle(pending.key.name)) : ''}
        confirmLabel={pending?.kind === 'rotate' ? t.apiKeys.rotate : t.apiKeys.revoke}
        danger={pending?.kind === 'revoke'}
        busy={act.isPending}
        error={dialogError}
        onConfirm={() => pending && act.mutate(pending)}
        onCancel={() => setPending(null)}
      >
        <p>{pending?.kind === 'rotate' ? t.apiKeys.rotateBody : t.apiKeys.revokeBody}</p>
      </ConfirmDialog>
    </>
  );
}

function CreateKeyForm({ onCancel, onCreated }: { onCancel(): void; onCreated(key: ApiKeyWithSecret): void }) {
  const { api } = useSession();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Set<string>>(new Set());
  const [environments, setEnvironments] = useState<Set<string>>(new Set());
  const [ips, setIps] = useState('');
  const [expires, setExpires] = useState('');
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);

  const catalogue = useQuery({ queryKey: ['api-key-scopes'], queryFn: () => api.request('listApiKeyScopes'), staleTime: Infinity });

  const create = useMutation({
    mutationFn: () => api.request('createApiKey', {
      body: {
        name: name.trim(),
        scopes: [...scopes] as BodyOf<'createApiKey'>['scopes'],
        environments: environments.size > 0 ? ENVIRONMENTS.filter((e) => environments.has(e)) : null,
        allowed_ips: parseIpList(ips),
        expires_at: localInputToIso(expires),
      },
    }),
    onSuccess: ({ data }) => onCreated(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    create.mutate();
  }

  const toggle = (set: Set<string>, value: string, on: boolean) => { const n = new Set(set); on ? n.add(value) : n.delete(value); return n; };
  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="create-key-title">
      <h2 id="create-key-title">{t.apiKeys.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      <Field id="name" label={t.apiKeys.name} hint={t.apiKeys.nameHint} error={fe.name}>
        <input id="name" value={name} maxLength={200} onChange={(e) => setName(e.target.value)} autoFocus
          aria-invalid={!!fe.name} aria-describedby={describedBy('name', true, !!fe.name)} />
      </Field>

      <fieldset aria-describedby={fe.scopes ? 'scopes-error' : undefined} aria-invalid={!!fe.scopes}>
        <legend>{t.apiKeys.scopesLegend}</legend>
        {catalogue.isPending ? <Loading />
          : catalogue.isError ? <ErrorState error={catalogue.error} onRetry={() => void catalogue.refetch()} />
          : (
            <div className="scope-groups">
              {groupScopes(catalogue.data.data).map((g) => (
                <div key={g.group} className="scope-group" role="group" aria-labelledby={`scope-group-${g.group}`}>
                  <h3 id={`scope-group-${g.group}`}>{t.apiKeys.scopeGroups[g.group] ?? g.group}</h3>
                  {g.scopes.map((s) => (
                    <label key={s.scope} className="check">
                      <input type="checkbox" checked={scopes.has(s.scope)} value={s.scope}
                        onChange={(e) => setScopes((cur) => toggle(cur, s.scope, e.target.checked))} />
                      <span><code>{s.scope}</code> — {s.description}</span>
                    </label>
                  ))}
                </div>
              ))}
            </div>
          )}
        {fe.scopes && <span className="field-error" id="scopes-error">{fe.scopes}</span>}
      </fieldset>

      <fieldset aria-describedby={['environments-hint', fe.environments && 'environments-error'].filter(Boolean).join(' ')}>
        <legend>{t.apiKeys.environmentsLegend}</legend>
        {ENVIRONMENTS.map((env) => (
          <label key={env} className="check">
            <input type="checkbox" checked={environments.has(env)} onChange={(e) => setEnvironments((cur) => toggle(cur, env, e.target.checked))} />
            <span>{t.apiKeys.environmentNames[env]}</span>
          </label>
        ))}
        <span className="hint" id="environments-hint">{t.apiKeys.environmentsHint}</span>
        {fe.environments && <span className="field-error" id="environments-error">{fe.environments}</span>}
      </fieldset>

      <Field id="allowed_ips" label={t.apiKeys.ipsLabel} hint={t.apiKeys.ipsHint} error={fe.allowed_ips}>
        <textarea id="allowed_ips" rows={3} value={ips} onChange={(e) => setIps(e.target.value)} spellCheck={false}
          aria-invalid={!!fe.allowed_ips} aria-describedby={describedBy('allowed_ips', true, !!fe.allowed_ips)} />
      </Field>
      <Field id="expires_at" label={t.apiKeys.expiresLabel} hint={t.apiKeys.expiresHint} error={fe.expires_at}>
        <input id="expires_at" type="datetime-local" value={expires} onChange={(e) => setExpires(e.target.value)}
          aria-invalid={!!fe.expires_at} aria-describedby={describedBy('expires_at', true, !!fe.expires_at)} />
      </Field>
      <div className="form-actions">
        <button type="submit" disabled={create.isPending}>{create.isPending ? t.apiKeys.creating : t.apiKeys.create}</button>
        <button type="button" className="secondary" onClick={onCancel}>{t.common.cancel}</button>
      </div>
    </form>
  );
}
