import { t } from '../i18n';

/** Previous / next over a paged list, with "page N of M · total"; `onPage` gets the page to show. */
export function Pager({ page, pages, total, onPage }: { page: number; pages: number; total: string; onPage: (page: number) => void }) {
  return (
    <nav className="pager" aria-label={t.queue.pagination}>
      <button type="button" className="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>{t.queue.previous}</button>
      <span>{t.queue.page(page, pages)} · {total}</span>
      <button type="button" className="secondary" disabled={page >= pages} onClick={() => onPage(page + 1)}>{t.queue.next}</button>
    </nav>
  );
}
