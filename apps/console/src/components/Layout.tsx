import { useEffect, useRef, useState } from 'react';
import { NavLink, Outlet, useLocation } from 'react-router';
import { t } from '../i18n';
import { openQueuesBoard } from '../lib/board';
import { useIsAdmin, useSession } from '../session-context';

export function Layout() {
  const { session, signOut } = useSession();
  const location = useLocation();
  const isAdmin = useIsAdmin();
  const main = useRef<HTMLElement>(null);
  const [boardState, setBoardState] = useState<{ opening: boolean; error?: string }>({ opening: false });
  async function openBoard() {
    if (!session) return;
    setBoardState({ opening: true });
    try {
      await openQueuesBoard(session.token);
    } catch (err) {
      setBoardState({ opening: false, error: err instanceof Error ? err.message : t.board.failed });
    }
  }
  // a new page moves the focus to its content, as a page load would for a screen reader
  useEffect(() => main.current?.focus(), [location.pathname]);
  return (
    <>
      <a className="skip-link" href="#content">{t.app.skipToContent}</a>
      <header className="top">
        <span className="brand">{t.app.name}</span>
        <span className="who">{session && t.app.signedInAs(session.user.email, session.user.role)}</span>
        <NavLink to="/password" className="account-link">{t.password.nav}</NavLink>
        <button type="button" className="secondary" onClick={() => void signOut()}>{t.app.signOut}</button>
        <nav aria-label={t.app.mainNav}>
          <NavLink to="/" end>{t.nav.overview}</NavLink>
          <NavLink to="/jobs">{t.jobs.nav}</NavLink>
          <NavLink to="/machines">{t.machines.nav}</NavLink>
          <NavLink to="/queues">{t.adminNav.queues}</NavLink>
          {isAdmin && <NavLink to="/processes">{t.adminNav.processes}</NavLink>}
          {isAdmin && <NavLink to="/folders">{t.adminNav.folders}</NavLink>}
          {isAdmin && <NavLink to="/asset-catalogue">{t.adminNav.assets}</NavLink>}
          <NavLink to="/schedules">{t.adminNav.schedules}</NavLink>
          <NavLink to="/triggers">{t.adminNav.triggers}</NavLink>
          {isAdmin && <NavLink to="/api-keys">{t.adminNav.apiKeys}</NavLink>}
          {isAdmin && <NavLink to="/audit-log">{t.adminNav.auditLog}</NavLink>}
          {isAdmin && <NavLink to="/users">{t.adminNav.users}</NavLink>}
          {isAdmin && <NavLink to="/webhooks">{t.adminNav.webhooks}</NavLink>}
          {isAdmin && <NavLink to="/events">{t.adminNav.events}</NavLink>}
          {isAdmin && (
            <button type="button" className="nav-link" onClick={() => void openBoard()} disabled={boardState.opening}>
              {boardState.opening ? t.board.opening : t.board.open}
            </button>
          )}
        </nav>
        {boardState.error && <p className="top-error" role="alert">{boardState.error}</p>}
      </header>
      <main id="content" ref={main} tabIndex={-1}>
        <Outlet />
      </main>
    </>
  );
}
