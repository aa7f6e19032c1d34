import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { t } from '../i18n';
import { useIsAdmin } from '../session-context';

/** An admin page: a member who opens its address gets a designed "sin permiso" page, and no request is made. */
export function AdminOnly({ children }: { children: ReactNode }) {
  if (useIsAdmin()) return <>{children}</>;
  return (
    <section className="state no-permission" aria-labelledby="no-permission-title">
      <h1 id="no-permission-title">{t.admin.noPermissionTitle}</h1>
      <p>{t.admin.noPermission}</p>
      <Link to="/">{t.app.backToOverview}</Link>
    </section>
  );
}
