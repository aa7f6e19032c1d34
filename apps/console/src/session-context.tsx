import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { consoleApi, setUnauthorizedHandler, type ConsoleApi } from './lib/api';
import { clearSession, loadSession, saveSession, type Session } from './lib/session';

/** Why the sign-in page is shown: a first visit, a session that ended by itself, or a sign-out. */
export type EndReason = 'expired' | 'signed-out' | null;

interface SessionApi {
  session: Session | null;
  endReason: EndReason;
  signIn(email: string, password: string): Promise<void>;
  signOut(): Promise<void>;
  /** The one-time password was replaced: the rest of the console opens. */
  passwordChanged(): void;
  /** The API's operations, called with the session's token (lib/api.ts). */
  api: ConsoleApi;
}

const SessionContext = createContext<SessionApi | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const [session, setSession] = useState<Session | null>(() => loadSession());
  const [endReason, setEndReason] = useState<EndReason>(null);

  const end = useCallback((reason: EndReason) => {
    clearSession();
    queryClient.clear(); // nothing of one user's workspace stays in the cache for the next
    setSession(null);
    setEndReason(reason);
  }, [queryClient]);

  // a 401 on any request means the token was revoked or expired on the server's clock
  useEffect(() => setUnauthorizedHandler(() => end('expired')), [end]);

  // the token's own expiry ends the session without waiting for a request to fail
  useEffect(() => {
    if (!session) return;
    const left = new Date(session.expiresAt).getTime() - Date.now();
    // setTimeout holds at most ~24.8 days; a longer token is checked again then
    const timer = setTimeout(() => (Date.now() >= new Date(session.expiresAt).getTime() ? end('expired') : setSession({ ...session })),
      Math.max(0, Math.min(left, 2 ** 31 - 1)));
    return () => clearTimeout(timer);
  }, [session, end]);

  const value = useMemo<SessionApi>(() => ({
    session,
    endReason,
    async signIn(email, password) {
      const data = await consoleApi().call('logIn', { body: { email, password } });
      const next = { token: data.access_token, expiresAt: data.expires_at, user: data.user };
      saveSession(next);
      setEndReason(null);
      setSession(next);
    },
    async signOut() {
      // the token is revoked on the server; a failure (already expired) still ends it here
      if (session) await consoleApi(session.token).call('logOut').catch(() => undefined);
      end('signed-out');
    },
    passwordChanged() {
      if (!session) return;
      const next = { ...session, user: { ...session.user, must_change_password: false } };
      saveSession(next);
      setSession(next);
    },
    api: consoleApi(session?.token),
  }), [session, endReason, end]);

  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionApi {
  const api = useContext(SessionContext);
  if (!api) throw new Error('useSession outside SessionProvider');
  return api;
}

export function useIsAdmin(): boolean {
  return useSession().session?.user.role === 'admin';
}
