import type { ReactNode } from 'react';

/**
 * A table in a region named by its caption (the caption is for screen readers). The region is
 * focusable: at phone width the table scrolls sideways, which the keyboard must reach.
 */
export function DataTable<T>({ caption, className, head, rows, row }: {
  caption: string;
  className: string;
  /** the header cells */
  head: ReactNode;
  rows: readonly T[];
  row(item: T): ReactNode;
}) {
  return (
    <div className="table-wrap" role="region" aria-label={caption} tabIndex={0}>
      <table className={className}>
        <caption className="visually-hidden">{caption}</caption>
        <thead><tr>{head}</tr></thead>
        <tbody>{rows.map(row)}</tbody>
      </table>
    </div>
  );
}
