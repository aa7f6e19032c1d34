import { useState, type ReactNode } from 'react';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import type { OperationId } from '@svc/client';
import { t } from '../i18n';
import type { Catalogue, CatalogueRecord, Column } from '../lib/catalogue-page';
import { useIsAdmin, useSession } from '../session-context';
import { AdminTable } from './AdminTable';
import { CatalogueForm } from './CatalogueForm';
import { DeactivateDialog, useDeactivation } from './Deactivation';
import { Dependants } from './Dependants';

/**
 * A catalogue page as its descriptor declares it: the title with "new", the list, the create/edit
 * form, a notice of what was done and the deactivation's confirmation with what depends on the
 * record. Members see the list; admins change it.
 */
export function CataloguePage<Row extends CatalogueRecord, Values extends object, Create extends OperationId, Update extends OperationId>({ catalogue: c }: {
  catalogue: Catalogue<Row, Values, Create, Update>;
}) {
  const { api } = useSession();
  const isAdmin = useIsAdmin();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<Row | 'new' | null>(null);
  const ownNotice = useState<string | null>(null);
  const [notice, setNotice] = c.notice ?? ownNotice;
  const { texts, label } = c;

  const list = useQuery({
    queryKey: c.queryKey,
    queryFn: () => c.list(api),
    // a list that reads again by itself keeps its rows on screen meanwhile
    ...(c.refetchEvery ? { refetchInterval: c.refetchEvery, placeholderData: keepPreviousData } : {}),
  });
  const refresh = () => Promise.all(c.refreshes.map((queryKey) => queryClient.invalidateQueries({ queryKey })));
  const deactivation = useDeactivation<Row>((id) => c.deactivate(api, id), (row) => {
    setNotice(texts.deactivated(label(row)));
    c.onDeactivated?.(row);
    void refresh();
  });
  const edit = (row: Row | 'new') => { setEditing(row); setNotice(null); };
  const actionsColumn = isAdmin || !c.adminColumn;

  return (
    <>
      <div className="title-row">
        <h1>{texts.title}</h1>
        {isAdmin && editing === null && <button type="button" onClick={() => { c.onNew?.(); edit('new'); }}>{texts.newRecord}</button>}
      </div>
      <p className={c.introIsNote ? 'muted small' : 'muted'}>{texts.intro}</p>
      {c.parts?.underIntro}
      <div role="status" aria-live="polite" className="live">{notice && <p className="notice ok">{notice}</p>}</div>

      {c.parts?.aboveForm}
      {editing !== null && (
        <CatalogueForm key={editing === 'new' ? 'new' : editing.id} catalogue={c} record={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={(row) => {
            setEditing(null);
            setNotice(c.onSaved ? c.onSaved(row) : texts.saved(label(row)));
            void refresh();
          }} />
      )}
      {c.parts?.belowForm}

      <AdminTable
        query={list}
        caption={texts.caption}
        className={c.className}
        empty={texts.empty}
        before={c.parts?.aboveTable}
        total={c.moreRows}
        head={<>
          {c.columns.map((col, i) => <th key={i} scope="col" className={col.num ? 'num' : undefined}>{col.header}</th>)}
          {actionsColumn && <th scope="col"><span className="visually-hidden">{t.admin.confirm}</span></th>}
        </>}
        row={(row) => (
          <tr key={row.id} {...c.rowData(row)}>
            {c.columns.map((col, i) => <Cell key={i} column={col} row={row} header={i === 0} />)}
            {actionsColumn && (
              <td><div className="row-actions">
                {c.actions?.(row)}
                {isAdmin && <button type="button" className="secondary" aria-label={texts.editLabel(label(row))} onClick={() => edit(row)}>{t.admin.edit}</button>}
                {isAdmin && row.is_active && (
                  <>
                    {c.activeActions?.(row)}
                    <button type="button" className="danger" aria-label={texts.deactivateLabel(label(row))} onClick={() => deactivation.ask(row)}>{t.admin.deactivate}</button>
                  </>
                )}
              </div></td>
            )}
          </tr>
        )}
      />

      {c.parts?.dialogs}
      <DeactivateDialog deactivation={deactivation} title={(row) => texts.deactivateTitle(label(row))}>
        <p>{texts.deactivateBody}</p>
        {deactivation.pending && c.dependants && <Dependants {...c.dependants(deactivation.pending)} />}
      </DeactivateDialog>
    </>
  );
}

function Cell<Row>({ column, row, header }: { column: Column<Row>; row: Row; header: boolean }) {
  if (header) return <th scope="row">{column.cell(row)}</th>;
  const className = [column.num && 'num', column.className].filter(Boolean).join(' ') || undefined;
  return <td className={className} {...column.data}>{column.cell(row)}</td>;
}

/** The status column most lists end with: active or not, and what the page adds (a queue in pause). */
export function statusColumn<Row extends CatalogueRecord>(more?: (row: Row) => ReactNode): Column<Row> {
  return {
    header: t.admin.status,
    cell: (row) => <><span className={`badge ${row.is_active ? 'badge-completed' : ''}`}>{row.is_active ? t.admin.active : t.admin.inactive}</span>{more?.(row)}</>,
  };
}
