import { useState, type FormEvent } from 'react';
import { Field } from '../components/Field';
import { t } from '../i18n';
import { formErrors, type FormErrors } from '../lib/errors';
import { useSession } from '../session-context';

const FIELDS = ['email', 'password'] as const;

export function SignInPage() {
  const { signIn, endReason } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [errors, setErrors] = useState<FormErrors>({ fields: {}, general: null });

  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setErrors({ fields: {}, general: null });
    try {
      await signIn(email.trim(), password);
    } catch (err) {
      setErrors(formErrors(err, FIELDS, t.common.unexpectedError));
      setBusy(false);
    }
  }

  const notice = endReason === 'expired' ? t.signIn.expired : endReason === 'signed-out' ? t.signIn.signedOut : null;
  return (
    <main id="content" className="sign-in">
      <form onSubmit={submit} noValidate aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">{t.signIn.title}</h1>
        <p className="muted">{t.signIn.intro}</p>
        {notice && <p className="notice" role="status">{notice}</p>}
        {errors.general && <p className="form-error" role="alert" id="sign-in-error">{errors.general}</p>}
        <Field id="email" label={t.signIn.email} error={errors.fields.email}>
          <input id="email" name="email" type="email" autoComplete="username" required value={email}
            onChange={(e) => setEmail(e.target.value)} aria-invalid={!!errors.fields.email}
            aria-describedby={errors.fields.email ? 'email-error' : undefined} />
        </Field>
        <Field id="password" label={t.signIn.password} error={errors.fields.password}>
          <input id="password" name="password" type="password" autoComplete="current-password" required value={password}
            onChange={(e) => setPassword(e.target.value)} aria-invalid={!!errors.fields.password}
            aria-describedby={errors.fields.password ? 'password-error' : undefined} />
        </Field>
        <button type="submit" disabled={busy}>{busy ? t.signIn.submitting : t.signIn.submit}</button>
      </form>
    </main>
  );
}
