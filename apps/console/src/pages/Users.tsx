import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { describedBy, NO_ERRORS } from '../components/AdminForm';
import { AdminTable } from '../components/AdminTable';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field } from '../components/Field';
import { SecretOnce, type SecretTexts } from '../components/SecretOnce';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { topLevelErrors } from '../lib/admin';
import { ApiError, type FormErrors } from '../lib/errors';
import { USER_ROLES, type WorkspaceUser, type WorkspaceUserWithPassword } from '../lib/api';
import { useSession } from '../session-context';

const FIELDS = ['email', 'name', 'role'] as const;
const SECRET_TEXTS: SecretTexts = {
  secretWarning: t.users.secretWarning, secretLabel: t.users.secretLabel, copy: t.users.copy, copied: t.users.copied,
  copyFallback: t.users.copyFallback, done: t.users.done,
};

type Pending = { kind: 'role'; user: WorkspaceUser; role: WorkspaceUser['role'] } | { kind: 'deactivate'; user: WorkspaceUser };

/** The workspace's people (admins): list, add with a one-time password shown once, change role, deactivate. */
export function UsersPage() {
  const { api, session } = useSession();
  const queryClient = useQueryClient();
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<{ title: string; password: string } | null>(null);
  const [pending, setPending] = useState<Pending | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [dialogError, setDialogError] = useState<string | null>(null);

  const users = useQuery({ queryKey: ['users'], queryFn: () => api.request('listUsers', { query: { limit: 100 } }) });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['users'] });

  const act = useMutation({
    mutationFn: (p: Pending) => p.kind === 'role'
      ? api.request('updateUser', { path: { user_id: p.user.id }, body: { role: p.role } })
      : api.request('deactivateUser', { path: { user_id: p.user.id } }),
    onSuccess: (_answer, p) => {
      setPending(null);
      setDialogError(null);
      setNotice(p.kind === 'role' ? t.users.roleChanged(p.user.email) : t.users.deactivated(p.user.email));
      void refresh();
    },
    onError: (err) => setDialogError(err instanceof ApiError ? err.message : t.common.unexpectedError),
  });

  const ask = (p: Pending) => { setDialogError(null); setPending(p); };
  return (
    <>
      <div className="title-row">
        <h1>{t.users.title}</h1>
        {!creating && <button type="button" onClick={() => { setCreating(true); setSecret(null); setNotice(null); }}>{t.users.newUser}</button>}
      </div>
      <p className="muted">{t.users.intro}</p>
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {secret && <SecretOnce title={secret.title} secret={secret.password} texts={SECRET_TEXTS} onDone={() => setSecret(null)} />}
      {creating && (
        <CreateUserForm
          onCancel={() => setCreating(false)}
          onCreated={(created) => {
            setCreating(false);
            setSecret({ title: t.users.secretTitle(created.email), password: created.one_time_password });
            void refresh();
          }}
        />
      )}

      <AdminTable
        query={users}
        caption={t.users.caption}
        className="users"
        empty={t.users.empty}
        head={<>
          <th scope="col">{t.users.email}</th>
          <th scope="col">{t.admin.name}</th>
          <th scope="col">{t.users.role}</th>
          <th scope="col">{t.admin.status}</th>
          <th scope="col">{t.admin.created}</th>
          <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>
        </>}
        row={(user) => {
          const self = user.id === session?.user.id;
          const other = user.role === 'admin' ? 'member' : 'admin';
          return (
            <tr key={user.id} data-user={user.email} data-role={user.role} data-active={String(user.is_active)}>
              <th scope="row">{user.email} {self && <span className="muted">{t.users.you}</span>}</th>
              <td>{user.name ?? <span className="muted">{t.common.none}</span>}</td>
              <td>{t.users.roles[user.role]}</td>
              <td>
                {user.is_active ? t.admin.active : t.admin.inactive}
                {user.is_active && user.must_change_password && <><br /><span className="muted">{t.users.pendingPassword}</span></>}
              </td>
              <td><Time iso={user.created_at} /></td>
              <td><div className="row-actions">
                {user.is_active && (
                  <>
                    <button type="button" className="secondary" aria-label={t.users.roleLabel(user.email, other)}
                      onClick={() => ask({ kind: 'role', user, role: other })}>{other === 'admin' ? t.users.makeAdmin : t.users.makeMember}</button>
                    <button type="button" className="danger" aria-label={t.users.deactivateLabel(user.email)}
                      onClick={() => ask({ kind: 'deactivate', user })}>{t.admin.deactivate}</button>
                  </>
                )}
              </div></td>
            </tr>
          );
        }}
      />

      <ConfirmDialog
        open={pending !== null}
        title={pending ? (pending.kind === 'role' ? t.users.roleTitle(pending.user.email, pending.role) : t.users.deactivateTitle(pending.user.email)) : ''}
        confirmLabel={pending?.kind === 'role' ? (pending.role === 'admin' ? t.users.makeAdmin : t.users.makeMember) : t.admin.deactivate}
        danger={pending?.kind === 'deactivate'}
        busy={act.isPending}
        error={dialogError}
        onConfirm={() => pending && act.mutate(pending)}
        onCancel={() => setPending(null)}
      >
        <p>{pending?.kind === 'role' ? t.users.roleBody : t.users.deactivateBody}</p>
      </ConfirmDialog>
    </>
  );
}

function CreateUserForm({ onCancel, onCreated }: { onCancel(): void; onCreated(user: WorkspaceUserWithPassword): void }) {
  const { api } = useSession();
  const [email, setEmail] = useState('');
  const [name, setName] = useState('');
  const [role, setRole] = useState<WorkspaceUser['role']>('member');
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);

  const create = useMutation({
    mutationFn: () => api.call('createUser', { body: { email: email.trim(), role, name: name.trim() === '' ? null : name.trim() } }),
    onSuccess: (data) => onCreated(data),
    onError: (err) => setErrors(topLevelErrors(err, FIELDS, t.common.unexpectedError)),
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    create.mutate();
  }

  const fe = errors.fields;
  return (
    <form className="card wide admin-form" onSubmit={submit} noValidate aria-labelledby="create-user-title">
      <h2 id="create-user-title">{t.users.createTitle}</h2>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      <Field id="email" label={t.users.email} error={fe.email}>
        <input id="email" type="email" value={email} maxLength={254} onChange={(e) => setEmail(e.target.value)} autoFocus autoComplete="off"
          aria-invalid={!!fe.email} aria-describedby={describedBy('email', false, !!fe.email)} />
      </Field>
      <Field id="name" label={t.users.name} error={fe.name}>
        <input id="name" value={name} maxLength={200} onChange={(e) => setName(e.target.value)}
          aria-invalid={!!fe.name} aria-describedby={describedBy('name', false, !!fe.name)} />
      </Field>
      <Field id="role" label={t.users.role} error={fe.role}>
        <select id="role" value={role} onChange={(e) => setRole(e.target.value as WorkspaceUser['role'])}
          aria-invalid={!!fe.role} aria-describedby={describedBy('role', false, !!fe.role)}>
          {USER_ROLES.map((r) => <option key={r} value={r}>{t.users.roles[r]}</option>)}
        </select>
      </Field>
      <div className="form-actions">
        <button type="submit" disabled={create.isPending}>{create.isPending ? t.users.creating : t.users.create}</button>
        <button type="button" className="secondary" onClick={onCancel}>{t.common.cancel}</button>
      </div>
    </form>
  );
}
