import type { User } from './api';

/**
 * The signed-in session, kept in sessionStorage: it lasts as long as the tab, is not sent with
 * every request like a cookie (so no CSRF surface), and is gone when the tab closes
 * (docs/decisions/console.md). The token's own expiry ends it earlier.
 */
export interface Session {
  token: string;
  expiresAt: string;
  user: User;
}

const KEY = 'svc.console.session';

export function isExpired(session: Pick<Session, 'expiresAt'>, now: Date = new Date()): boolean {
  return new Date(session.expiresAt).getTime() <= now.getTime();
}

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    if (!raw) return null;
    const session = JSON.parse(raw) as Session;
    if (typeof session?.token !== 'string' || isExpired(session)) {
      sessionStorage.removeItem(KEY);
      return null;
    }
    return session;
  } catch {
    return null;
  }
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}
