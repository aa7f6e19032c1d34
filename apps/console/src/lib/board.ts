import { t } from '../i18n';
import { ApiError, toApiError } from './errors';

/** Bull Board, served by the API beside the console (apps/api/src/admin/queues-board.ts). */
export const BOARD_PATH = '/admin/queues';

/**
 * Opens Bull Board: the session's bearer token is exchanged for the board's own short-lived
 * HttpOnly cookie (POST /admin/queues/session), then the browser goes there. The token never
 * appears in a URL, where history, logs and Referer headers would keep it.
 */
export async function openQueuesBoard(token: string, go: (url: string) => void = (url) => window.location.assign(url)): Promise<void> {
  let res: Response;
  try {
    res = await fetch(`${BOARD_PATH}/session`, {
      method: 'POST',
      headers: { Accept: 'application/json', Authorization: `Bearer ${token}` },
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError(0, 'NETWORK_ERROR', t.common.networkError);
  }
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) throw toApiError(res.status, body, t.board.failed);
  go(BOARD_PATH);
}
