/**
 * Business and application exceptions as the console shows them (the kind of an item's or a
 * job's last failure: `business` is final, `application` is retried by the queue's policy). Pure:
 * the texts and the locale are parameters, and the types are the API's (@svc/client), so jest
 * tests it as it is.
 */
import type { BodyOf, DataOf } from '@svc/client';
import { EXCEPTION_TYPES, type ExceptionType } from '@svc/core/queue-items/exception-types';

export { EXCEPTION_TYPES, type ExceptionType };

/** The `exception_type` parameter of the address: one of the two kinds, or '' (all) for anything else. */
export function exceptionTypeParam(value: string | null): ExceptionType | '' {
  return (EXCEPTION_TYPES as readonly string[]).includes(value ?? '') ? (value as ExceptionType) : '';
}

export interface ExceptionTexts {
  businessFinal: (n: string) => string;
  applicationRetried: (n: string) => string;
  business: (n: string) => string;
  application: (n: string) => string;
}

/**
 * The kind of a row's last failure when it is worth showing: on a failed or dead-letter item, or a
 * failed job. An item that failed, was retried and completed keeps the kind of that failure in the
 * API's record, which its row does not show.
 */
export function failureKind(row: { status: string; exception_type: ExceptionType | null }): ExceptionType | null {
  return row.exception_type && (row.status === 'failed' || row.status === 'dead_letter') ? row.exception_type : null;
}

type Stats = Pick<DataOf<'getQueueStats'>, 'counts' | 'business_failed' | 'failed_last_hour' | 'business_failed_last_hour'>;

/** "7 (5 de negocio, definitivos; 2 de aplicación, se reintentan)": the failed items now, each kind that has any. */
export function failedNowSentence(stats: Stats, texts: ExceptionTexts, locale: string): string {
  const n = (v: number) => new Intl.NumberFormat(locale).format(v);
  const failed = stats.counts.failed;
  const business = Math.min(stats.business_failed, failed);
  const parts = [business > 0 ? texts.businessFinal(n(business)) : '', failed - business > 0 ? texts.applicationRetried(n(failed - business)) : ''];
  return failed === 0 ? '0' : `${n(failed)} (${parts.filter(Boolean).join('; ')})`;
}

/** "3 (2 de negocio, 1 de aplicación)": the failures of the last hour by kind. */
export function failedLastHourSentence(stats: Stats, texts: ExceptionTexts, locale: string): string {
  const n = (v: number) => new Intl.NumberFormat(locale).format(v);
  const failed = stats.failed_last_hour;
  const business = Math.min(stats.business_failed_last_hour, failed);
  const parts = [business > 0 ? texts.business(n(business)) : '', failed - business > 0 ? texts.application(n(failed - business)) : ''];
  return failed === 0 ? '0' : `${n(failed)} (${parts.filter(Boolean).join(', ')})`;
}

type ItemFilter = NonNullable<BodyOf<'startWorkspaceQueueItemAction'>['filter']>;
type JobFilter = NonNullable<BodyOf<'startWorkspaceJobAction'>['filter']>;

/**
 * Whether a bulk retry on what the filter matches can meet business failures (failed items or
 * jobs that failed with a business exception): only then does the console offer to retry them too,
 * which the API does only when the body says `include_business`.
 */
export function retryMayMeetBusiness(target: { kind: 'items'; filter: ItemFilter } | { kind: 'jobs'; filter: JobFilter }): boolean {
  const status = target.filter.status;
  if (status !== undefined && status !== 'failed') return false;
  return target.kind === 'jobs' || target.filter.exception_type !== 'application';
}

/** The filter names business failures only: a retry of them without `include_business` is refused (422). */
export function retryNeedsBusiness(target: { kind: 'items'; filter: ItemFilter } | { kind: 'jobs'; filter: JobFilter }): boolean {
  return target.kind === 'items' && target.filter.exception_type === 'business';
}
