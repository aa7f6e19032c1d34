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
        {boardState.error && <p className="top-error" role="alert">{boardState.error}</p>}
      </header>
      <div className="shell">
        {/* one landmark, its links in three labelled groups: a column beside the page on a wide screen, rows above it on a narrow one */}
        <nav aria-label={t.app.mainNav} className="main-nav">
          <div role="group" aria-labelledby="nav-work" className="nav-group">
            <span id="nav-work" className="nav-group-label">{t.navGroups.work}</span>
            <NavLink to="/" end>{t.nav.overview}</NavLink>
            <NavLink to="/jobs">{t.jobs.nav}</NavLink>
            <NavLink to="/machines">{t.machines.nav}</NavLink>
            <NavLink to="/queues">{t.adminNav.queues}</NavLink>
            <NavLink to="/schedules">{t.adminNav.schedules}</NavLink>
            <NavLink to="/triggers">{t.adminNav.triggers}</NavLink>
          </div>
          {isAdmin && (
            <div role="group" aria-labelledby="nav-catalogue" className="nav-group">
              <span id="nav-catalogue" className="nav-group-label">{t.navGroups.catalogue}</span>
              <NavLink to="/processes">{t.adminNav.processes}</NavLink>
              <NavLink to="/folders">{t.adminNav.folders}</NavLink>
              <NavLink to="/asset-catalogue">{t.adminNav.assets}</NavLink>
            </div>
          )}
          {isAdmin && (
            <div role="group" aria-labelledby="nav-admin" className="nav-group">
              <span id="nav-admin" className="nav-group-label">{t.navGroups.administration}</span>
              <NavLink to="/users">{t.adminNav.users}</NavLink>
              <NavLink to="/api-keys">{t.adminNav.apiKeys}</NavLink>
              <NavLink to="/webhooks">{t.adminNav.webhooks}</NavLink>
              <NavLink to="/events">{t.adminNav.events}</NavLink>
              <NavLink to="/audit-log">{t.adminNav.auditLog}</NavLink>
              <button type="button" className="nav-link" onClick={() => void openBoard()} disabled={boardState.opening}>
                {boardState.opening ? t.board.opening : t.board.open}
              </button>
            </div>
          )}
        </nav>
        <main id="content" ref={main} tabIndex={-1}>
          <Outlet />
        </main>
      </div>
    </>
  );
}
