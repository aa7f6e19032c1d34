import { useEffect, useRef, useState } from 'react';
import { NavLink, Outlet, useLocation } from 'react-router';
import { t } from '../i18n';
import { openQueuesBoard } from '../lib/board';
import { useIsAdmin, useSession } from '../session-context';

/** The main navigation's three groups; the catalogue and administration are for admins only. */
const NAV_GROUPS: ReadonlyArray<{ id: string; label: keyof typeof t.navGroups; adminOnly: boolean; links: ReadonlyArray<readonly [string, string]> }> = [
  { id: 'work', label: 'work', adminOnly: false, links: [
    ['/', t.nav.overview], ['/jobs', t.jobs.nav], ['/machines', t.machines.nav],
    ['/queues', t.adminNav.queues], ['/schedules', t.adminNav.schedules], ['/triggers', t.adminNav.triggers],
  ] },
  { id: 'catalogue', label: 'catalogue', adminOnly: true, links: [
    ['/processes', t.adminNav.processes], ['/folders', t.adminNav.folders], ['/asset-catalogue', t.adminNav.assets],
  ] },
  { id: 'admin', label: 'administration', adminOnly: true, links: [
    ['/users', t.adminNav.users], ['/api-keys', t.adminNav.apiKeys], ['/webhooks', t.adminNav.webhooks],
    ['/events', t.adminNav.events], ['/audit-log', t.adminNav.auditLog],
  ] },
];

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
          {NAV_GROUPS.filter((g) => isAdmin || !g.adminOnly).map((g) => (
            <div key={g.id} role="group" aria-labelledby={`nav-${g.id}`} className="nav-group">
              <span id={`nav-${g.id}`} className="nav-group-label">{t.navGroups[g.label]}</span>
              {g.links.map(([to, label]) => <NavLink key={to} to={to} end={to === '/'}>{label}</NavLink>)}
              {g.id === 'admin' && (
                <button type="button" className="nav-link" onClick={() => void openBoard()} disabled={boardState.opening}>
                  {boardState.opening ? t.board.opening : t.board.open}
                </button>
              )}
            </div>
          ))}
        </nav>
        <main id="content" ref={main} tabIndex={-1}>
          <Outlet />
        </main>
      </div>
    </>
  );
}
