import { useSyncExternalStore } from 'react';
import { t } from '../i18n';
import { absoluteTime, smartTime } from '../lib/format';

/** One clock for every relative time on the page, ticking while something shows one. */
const TICK_MS = 15_000;
let now = Date.now();
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | undefined;

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  timer ??= setInterval(() => {
    now = Date.now();
    listeners.forEach((l) => l());
  }, TICK_MS);
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

/** A moment in the browser's time zone: relative when recent (kept current), the exact date on hover and for readers. */
export function Time({ iso }: { iso: string | null }) {
  // the tick only makes the component render again; the time is read at render, so a moment just
  // created never reads "dentro de 3 segundos" against a clock 15 s old
  useSyncExternalStore(subscribe, () => now);
  if (!iso) return <span className="muted">{t.common.none}</span>;
  return <time dateTime={iso} title={absoluteTime(iso, t.locale)}>{smartTime(iso, new Date(), t.locale)}</time>;
}
