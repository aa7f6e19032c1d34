import { useEffect, useState, type FormEvent } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { DataTable } from '../components/DataTable';
import { Field } from '../components/Field';
import { Empty, ErrorState, Loading } from '../components/States';
import { Time } from '../components/Time';
import { t } from '../i18n';
import { NO_AUDIT_FILTERS, auditQuery, type AuditFilters } from '../lib/admin';
import type { QueryOf } from '@svc/client';
import { AUDIT_ACTOR_TYPES } from '../lib/api';
import { useSession } from '../session-context';

const PAGE_SIZE = 50;
const KEYS = Object.keys(NO_AUDIT_FILTERS) as Array<keyof AuditFilters>;

function filtersOf(params: URLSearchParams): AuditFilters {
  const f = { ...NO_AUDIT_FILTERS };
  for (const k of KEYS) f[k] = params.get(k) ?? '';
  return f;
}

/** The workspace's audit log (admins): filters in the address, newest first, "Cargar más" on the keyset cursor. */
export function AuditLogPage() {
  const { api } = useSession();
  const [params, setParams] = useSearchParams();
  const applied = filtersOf(params);
  const [draft, setDraft] = useState<AuditFilters>(applied);
  const appliedKey = KEYS.map((k) => applied[k]).join('\u0000');
  // the address changed (a link, back, "Quitar filtros"): the form shows what is applied
  useEffect(() => setDraft(filtersOf(params)), [appliedKey]);

  const log = useInfiniteQuery({
    queryKey: ['audit-log', applied],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) => api.request('readAuditLog', { query: auditQuery(applied, PAGE_SIZE, pageParam) as QueryOf<'readAuditLog'> }),
    getNextPageParam: (last) => last.meta.next_cursor,
  });

  function apply(e: FormEvent) {
    e.preventDefault();
    const next = new URLSearchParams();
    for (const k of KEYS) if (draft[k].trim()) next.set(k, draft[k].trim());
    setParams(next);
  }

  const set = (k: keyof AuditFilters) => (e: { target: { value: string } }) => setDraft((d) => ({ ...d, [k]: e.target.value }));
  const entries = log.data?.pages.flatMap((p) => p.data) ?? [];
  const filtered = KEYS.some((k) => applied[k]);
  return (
    <>
      <h1>{t.audit.title}</h1>
      <p className="muted">{t.audit.intro}</p>
      <form className="card wide audit-filters" onSubmit={apply} aria-labelledby="audit-filters-title">
        <h2 id="audit-filters-title" className="visually-hidden">{t.audit.filters}</h2>
        <div className="filters">
          <Field id="f-action" label={t.audit.action} hint={t.audit.actionHint}>
            <input id="f-action" value={draft.action} maxLength={100} onChange={set('action')} aria-describedby="f-action-hint" />
          </Field>
          <Field id="f-actor-type" label={t.audit.actorType}>
            <select id="f-actor-type" value={draft.actor_type} onChange={set('actor_type')}>
              <option value="">{t.audit.anyActor}</option>
              {AUDIT_ACTOR_TYPES.map((a) => <option key={a} value={a}>{t.audit.actorTypes[a]}</option>)}
            </select>
          </Field>
          <Field id="f-actor-id" label={t.audit.actorId}>
            <input id="f-actor-id" value={draft.actor_id} maxLength={36} spellCheck={false} onChange={set('actor_id')} />
          </Field>
          <Field id="f-resource-type" label={t.audit.resourceType} hint={t.audit.resourceTypeHint}>
            <input id="f-resource-type" value={draft.resource_type} maxLength={100} onChange={set('resource_type')} aria-describedby="f-resource-type-hint" />
          </Field>
          <Field id="f-resource-id" label={t.audit.resourceId}>
            <input id="f-resource-id" value={draft.resource_id} maxLength={36} spellCheck={false} onChange={set('resource_id')} />
          </Field>
          <Field id="f-since" label={t.audit.since}>
            <input id="f-since" type="datetime-local" value={draft.since} onChange={set('since')} />
          </Field>
          <Field id="f-until" label={t.audit.until}>
            <input id="f-until" type="datetime-local" value={draft.until} onChange={set('until')} />
          </Field>
        </div>
        <div className="form-actions">
          <button type="submit">{t.audit.apply}</button>
          {filtered && <button type="button" className="secondary" onClick={() => setParams(new URLSearchParams())}>{t.audit.clear}</button>}
        </div>
      </form>

      {log.isPending ? <Loading />
        : log.isError && entries.length === 0 ? <ErrorState error={log.error} onRetry={() => void log.refetch()} />
        : entries.length === 0 ? <Empty>{t.audit.empty}</Empty>
        : (
          <>
            <DataTable
              caption={t.audit.caption}
              className="audit"
              head={<>
                <th scope="col">{t.audit.when}</th>
                <th scope="col">{t.audit.action}</th>
                <th scope="col">{t.audit.actor}</th>
                <th scope="col">{t.audit.resource}</th>
                <th scope="col">{t.audit.source}</th>
                <th scope="col">{t.audit.details}</th>
              </>}
              rows={entries}
              row={(e) => (
                <tr key={e.id} data-action={e.action} data-resource={e.resource_id ?? ''}>
                  <td><Time iso={e.created_at} /></td>
                  <td><code>{e.action}</code></td>
                  <td>{t.audit.actorTypes[e.actor_type] ?? e.actor_type}{e.actor_id && <><br /><code className="small">{e.actor_id}</code></>}</td>
                  <td>{e.resource_type ?? t.common.none}{e.resource_id && <><br /><code className="small">{e.resource_id}</code></>}</td>
                  <td>{e.source}{e.ip && <><br /><span className="muted small">{e.ip}</span></>}</td>
                  <td className="wrap"><code className="small">{Object.keys(e.details).length ? JSON.stringify(e.details) : t.common.none}</code></td>
                </tr>
              )}
            />
            {log.isFetchNextPageError && <ErrorState error={log.error} onRetry={() => void log.fetchNextPage()} />}
            <div className="pager">
              {log.hasNextPage
                ? <button type="button" className="secondary" disabled={log.isFetchingNextPage} onClick={() => void log.fetchNextPage()}>
                    {log.isFetchingNextPage ? t.audit.loadingMore : t.audit.loadMore}
                  </button>
                : <span className="muted">{t.audit.end}</span>}
            </div>
          </>
        )}
    </>
  );
}
