import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { t } from '../i18n';
import { ApiError } from '../lib/errors';

export function Loading({ label = t.common.loading }: { label?: string }) {
  return <p className="state loading" role="status" aria-live="polite"><span className="spinner" aria-hidden="true" />{label}</p>;
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="state empty">{children}</p>;
}

/** An error of a read: the API's Spanish message, its request id for support, and a retry. */
export function ErrorState({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const message = error instanceof ApiError ? error.message : t.common.unexpectedError;
  const requestId = error instanceof ApiError ? error.requestId : undefined;
  return (
    <div className="state error" role="alert">
      <strong>{t.common.errorTitle}</strong>
      <p>{message}</p>
      {requestId && <p className="muted small">{t.common.requestId(requestId)}</p>}
      {onRetry && <button type="button" onClick={onRetry}>{t.common.retry}</button>}
    </div>
  );
}

export function NotFound() {
  return (
    <section>
      <h1>{t.app.notFound}</h1>
      <Link to="/">{t.app.backToOverview}</Link>
    </section>
  );
}
