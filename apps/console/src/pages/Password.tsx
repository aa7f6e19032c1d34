import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { describedBy, NO_ERRORS } from '../components/AdminForm';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { formErrors, type FormErrors } from '../lib/errors';
import { useSession } from '../session-context';

const FIELDS = ['current_password', 'new_password'] as const;

/**
 * The signed-in user's own password. `forced`: a one-time password is being replaced, and the
 * console shows nothing else until it is (the API answers nothing else either); then the overview.
 */
export function PasswordPage({ forced = false }: { forced?: boolean }) {
  const { api, passwordChanged, signOut } = useSession();
  const navigate = useNavigate();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const [errors, setErrors] = useState<FormErrors>(NO_ERRORS);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setErrors(NO_ERRORS);
    setDone(false);
    if (next !== repeat) {
      setErrors({ fields: { repeat: t.password.mismatch }, general: null });
      return;
    }
    setBusy(true);
    try {
      await api.call('updateOwnPassword', { body: { current_password: current, new_password: next } });
      setCurrent('');
      setNext('');
      setRepeat('');
      passwordChanged();
      if (forced) navigate('/', { replace: true });
      else setDone(true);
    } catch (err) {
      setErrors(formErrors(err, FIELDS, t.common.unexpectedError));
    } finally {
      setBusy(false);
    }
  }

  const fe = errors.fields;
  const form = (
    <form className={forced ? undefined : 'card admin-form'} onSubmit={submit} noValidate aria-labelledby="password-title">
      <h1 id="password-title">{forced ? t.password.forcedTitle : t.password.title}</h1>
      <p className="muted">{forced ? t.password.forcedIntro : t.password.intro}</p>
      <div role="status" aria-live="polite" className="live">{done && <p className="notice ok">{t.password.changed}</p>}</div>
      {errors.general && <p className="form-error" role="alert">{errors.general}</p>}
      <Field id="current_password" label={t.password.current} error={fe.current_password}>
        <input id="current_password" type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)}
          aria-invalid={!!fe.current_password} aria-describedby={describedBy('current_password', false, !!fe.current_password)} />
      </Field>
      <Field id="new_password" label={t.password.next} hint={t.password.nextHint} error={fe.new_password}>
        <input id="new_password" type="password" autoComplete="new-password" value={next} onChange={(e) => setNext(e.target.value)}
          aria-invalid={!!fe.new_password} aria-describedby={describedBy('new_password', true, !!fe.new_password)} />
      </Field>
      <Field id="repeat" label={t.password.confirm} error={fe.repeat}>
        <input id="repeat" type="password" autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.target.value)}
          aria-invalid={!!fe.repeat} aria-describedby={describedBy('repeat', false, !!fe.repeat)} />
      </Field>
      <div className="form-actions">
        <button type="submit" disabled={busy}>{busy ? t.password.submitting : t.password.submit}</button>
        {forced && <button type="button" className="secondary" onClick={() => void signOut()}>{t.app.signOut}</button>}
      </div>
    </form>
  );
  // forced: a page of its own like sign-in (no navigation to pages that would answer 403)
  return forced ? <main id="content" className="sign-in">{form}</main> : form;
}
