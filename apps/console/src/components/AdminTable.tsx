import type { ReactNode } from 'react';
import type { UseQueryResult } from '@tanstack/react-query';
import { t } from '../i18n';
import type { Answer } from '../lib/api';
import { DataTable } from './DataTable';
import { Empty, ErrorState, Loading } from './States';

/**
 * A settings list read in one page (up to 100 rows): its loading, error and empty states, the
 * table with a caption for screen readers, and a line saying how many rows were left out.
 */
export function AdminTable<T>({ query, caption, className, empty, head, row, before, total = t.admin.moreRows }: {
  query: UseQueryResult<Answer<T[]>>;
  caption: string;
  className: string;
  empty: string;
  /** the header cells */
  head: ReactNode;
  row(item: T): ReactNode;
  /** shown above the table when there are rows (a chart of them) */
  before?: ReactNode;
  /** the line under a list longer than its page */
  total?(shown: number, total: number): string;
}) {
  const list = query.data?.data;
  const meta = query.data?.meta;
  return (
    <>
      {query.isPending ? <Loading />
        : query.isError ? <ErrorState error={query.error} onRetry={() => void query.refetch()} />
        : !list || list.length === 0 ? <Empty>{empty}</Empty>
        : (
          <>
            {before}
            <DataTable caption={caption} className={className} head={head} rows={list} row={row} />
          </>
        )}
      {list && meta && meta.total > list.length && <p className="muted">{total(list.length, meta.total)}</p>}
    </>
  );
}
