import { useCallback, useEffect, useRef, useState } from 'react';
import { useSearchParams } from 'react-router';
import { DataTable } from '../components/DataTable';
import { Field } from '../components/Field';
import { Empty, ErrorState, Loading } from '../components/States';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { followEventStream, setFilters } from '../lib/api';
import { ApiError } from '../lib/errors';
import { EVENT_TYPES, mergeNewest, reconnectDelayMs, typeFilter, type FeedEvent } from '../lib/events';
import { useSession } from '../session-context';

/** Events kept on the page (the newest); the feed keeps days of them. */
const MAX_SHOWN = 200;
const PAGE_SIZE = 100;
/** New events are announced at most this often, as one count, so a busy feed does not talk over the reader. */
const ANNOUNCE_EVERY_MS = 10_000;

type LiveState = 'connecting' | 'live' | 'reconnecting' | 'paused' | 'stopped';

/**
 * The workspace's event feed (admins; the feed and its stream are admin routes). The feed has one
 * cursor that only moves forward, so the page holds one: it reads the newest page of the feed
 * (`newest`), then follows the stream after it — or, paused, loads what came since on request —
 * and shows the newest events first.
 */
export function EventsPage() {
  const { api, session } = useSession();
  const [params, setParams] = useSearchParams();
  const type = typeFilter(params.get('type'));
  const [events, setEvents] = useState<FeedEvent[]>([]);
  const [loadState, setLoadState] = useState<{ loading: boolean; error: unknown }>({ loading: true, error: null });
  const [paused, setPaused] = useState(false);
  const [live, setLive] = useState<LiveState>('connecting');
  const [liveError, setLiveError] = useState<ApiError | null>(null);
  const [restart, setRestart] = useState(0);
  const [newer, setNewer] = useState<{ loading: boolean; upToDate: boolean; error: unknown }>({ loading: false, upToDate: false, error: null });
  const [announcement, setAnnouncement] = useState('');
  const cursor = useRef<string | undefined>(undefined);
  const unannounced = useRef(0);
  const token = session?.token ?? '';

  const take = useCallback((incoming: FeedEvent[], announce: boolean) => {
    if (!incoming.length) return;
    cursor.current = incoming[incoming.length - 1]!.id;
    setEvents((shown) => mergeNewest(shown, incoming, MAX_SHOWN));
    if (announce) unannounced.current += incoming.length;
  }, []);

  // a (new) filter: the newest page of the feed, which sets the cursor the rest follows from
  useEffect(() => {
    let gone = false;
    cursor.current = undefined;
    unannounced.current = 0;
    setEvents([]);
    setLoadState({ loading: true, error: null });
    setNewer({ loading: false, upToDate: false, error: null });
    api.request('readEvents', { query: { limit: PAGE_SIZE, newest: true, ...setFilters({ types: type }) } }).then(
      ({ data, meta }) => {
        if (gone) return;
        take(data, false);
        cursor.current = meta.next_cursor ?? cursor.current;
        setLoadState({ loading: false, error: null });
      },
      (error: unknown) => !gone && setLoadState({ loading: false, error }),
    );
    return () => { gone = true; };
  }, [api, type, take, restart]);

  // the stream, after the cursor, while the page is loaded and not paused; it comes back by itself
  // after a cut (with a growing wait), and stops on a refusal (429, 403) until asked again
  useEffect(() => {
    if (loadState.loading || loadState.error) return;
    if (paused) {
      setLive('paused');
      return;
    }
    const ac = new AbortController();
    let failures = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setLive('connecting');
    setLiveError(null);
    const connect = () => {
      setLive(failures ? 'reconnecting' : 'connecting');
      let opened = false;
      followEventStream(token, { after: cursor.current, types: type || undefined }, (incoming) => {
        take(incoming, true);
      }, ac.signal, () => {
        opened = true;
        failures = 0;
        setLive('live');
      }).then(
        () => {
          if (ac.signal.aborted) return;
          failures = opened ? 1 : failures + 1;
          setLive('reconnecting');
          timer = setTimeout(connect, reconnectDelayMs(failures));
        },
        (err: unknown) => {
          if (ac.signal.aborted) return;
          const refused = err instanceof ApiError && err.status >= 400 && err.status < 500;
          if (refused) {
            setLiveError(err);
            setLive('stopped');
            return;
          }
          failures += 1;
          setLive('reconnecting');
          timer = setTimeout(connect, reconnectDelayMs(failures));
        },
      );
    };
    connect();
    return () => {
      ac.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [loadState, paused, token, type, take, restart]);

  // one polite announcement of how many arrived, at most every ANNOUNCE_EVERY_MS
  useEffect(() => {
    const timer = setInterval(() => {
      const n = unannounced.current;
      if (n === 0) return;
      unannounced.current = 0;
      setAnnouncement(t.events.newEvents(n));
    }, ANNOUNCE_EVERY_MS);
    return () => clearInterval(timer);
  }, []);

  async function loadNewer() {
    setNewer({ loading: true, upToDate: false, error: null });
    try {
      const { data, meta } = await api.request('readEvents', { query: { limit: PAGE_SIZE, ...setFilters({ after: cursor.current, types: type }) } });
      take(data, false);
      cursor.current = meta.next_cursor ?? cursor.current;
      setNewer({ loading: false, upToDate: data.length < PAGE_SIZE, error: null });
    } catch (error) {
      setNewer({ loading: false, upToDate: false, error });
    }
  }

  const liveLabel = { connecting: t.events.connecting, live: t.events.live, reconnecting: t.events.reconnecting, paused: t.events.paused, stopped: t.events.streamError }[live];
  return (
    <>
      <h1>{t.events.title}</h1>
      <p className="muted">{t.events.intro}</p>
      <div className="card wide filters-card">
        <div className="filters">
          <Field id="f-type" label={t.events.filter}>
            <select id="f-type" value={type} onChange={(e) => setParams(new URLSearchParams(setFilters({ type: typeFilter(e.target.value) })))}>
              <option value="">{t.events.anyType}</option>
              {EVENT_TYPES.map((et) => <option key={et} value={et}>{t.eventTypes[et]} ({et})</option>)}
            </select>
          </Field>
        </div>
      </div>

      <div className="live-bar">
        <span className="live-state" data-state={live}>{liveLabel}</span>
        <button type="button" className="secondary" aria-pressed={paused} onClick={() => { setPaused((p) => !p); setNewer({ loading: false, upToDate: false, error: null }); }}>
          {paused ? t.events.resume : t.events.pause}
        </button>
        {paused && (
          <button type="button" className="secondary" disabled={newer.loading} onClick={() => void loadNewer()}>
            {newer.loading ? t.events.loadingNewer : t.events.loadNewer}
          </button>
        )}
        {paused && newer.upToDate && <span className="muted">{t.events.upToDate}</span>}
      </div>
      <div role="status" aria-live="polite" className="live visually-hidden" data-announcement="">{announcement}</div>
      {liveError && <ErrorState error={liveError} onRetry={() => setRestart((n) => n + 1)} />}
      {newer.error !== null && <ErrorState error={newer.error} onRetry={() => void loadNewer()} />}

      {loadState.loading ? <Loading />
        : loadState.error ? <ErrorState error={loadState.error} onRetry={() => setRestart((n) => n + 1)} />
        : events.length === 0 ? <Empty>{t.events.empty}</Empty>
        : (
          <>
            <DataTable
              caption={t.events.caption}
              className="events"
              head={<>
                <th scope="col">{t.events.when}</th>
                <th scope="col">{t.events.type}</th>
                <th scope="col">{t.events.data}</th>
              </>}
              rows={events}
              row={(e) => (
                <tr key={e.id} data-event={e.id} data-type={e.type}>
                  <td><Time iso={e.occurred_at} /></td>
                  <th scope="row">{t.eventTypes[e.type] ?? e.type}<br /><code className="small">{e.type}</code></th>
                  <td><pre className="event-data small">{JSON.stringify(e.data)}</pre></td>
                </tr>
              )}
            />
            {events.length >= MAX_SHOWN && <p className="muted">{t.events.capped(MAX_SHOWN)}</p>}
          </>
        )}
    </>
  );
}
