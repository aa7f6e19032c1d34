import type { BodyOf, DataOf } from '@svc/client';
import { es } from '../src/i18n/es';
import {
  exceptionTypeParam, failedLastHourSentence, failedNowSentence, failureKind, retryMayMeetBusiness, retryNeedsBusiness,
} from '../src/lib/exceptions';
import { nextFilterParams } from '../src/lib/filters';

type Stats = DataOf<'getQueueStats'>;
type ItemFilter = NonNullable<BodyOf<'startWorkspaceQueueItemAction'>['filter']>;
const stats = (failed: number, business: number, lastHour = 0, businessLastHour = 0) => ({
  counts: { new: 0, in_progress: 0, pending_review: 0, completed: 0, failed, dead_letter: 0 } satisfies Stats['counts'],
  business_failed: business, failed_last_hour: lastHour, business_failed_last_hour: businessLastHour,
});

/** Business and application exceptions on the queue page: the filter in the address, the counts as sentences, the rows, the bulk retry. */
describe('exception types in the console', () => {
  it('reads the filter from the address: one of the two kinds, anything else is all', () => {
    expect(exceptionTypeParam('business')).toBe('business');
    expect(exceptionTypeParam('application')).toBe('application');
    for (const other of [null, '', 'Business', 'negocio', 'business,application']) expect(exceptionTypeParam(other)).toBe('');
  });

  it('goes in the address with the other filters, and "Todas" removes it', () => {
    const withKind = nextFilterParams('?status=failed&reference=R-1&page=3', { exception_type: 'business' });
    expect(withKind.toString()).toBe('status=failed&reference=R-1&exception_type=business');
    expect(nextFilterParams(`?${withKind}`, { exception_type: '' }).toString()).toBe('status=failed&reference=R-1');
    expect(nextFilterParams(`?${withKind}`, { page: '2' }).get('exception_type')).toBe('business');
  });

  it('counts the failed items apart: business ones are final, application ones are retried', () => {
    const now = (failed: number, business: number) => failedNowSentence(stats(failed, business), es.exceptions, 'es');
    expect(now(7, 5)).toBe('7 (5 de negocio, definitivos; 2 de aplicación, se reintentan)');
    expect(now(5, 5)).toBe('5 (5 de negocio, definitivos)');
    expect(now(3, 0)).toBe('3 (3 de aplicación, se reintentan)');
    expect(now(0, 0)).toBe('0');
    expect(now(12_345, 10_000)).toBe('12.345 (10.000 de negocio, definitivos; 2345 de aplicación, se reintentan)');
  });

  it('counts the last hour\'s failures by kind', () => {
    const hour = (failed: number, business: number) => failedLastHourSentence(stats(0, 0, failed, business), es.exceptions, 'es');
    expect(hour(3, 2)).toBe('3 (2 de negocio, 1 de aplicación)');
    expect(hour(4, 0)).toBe('4 (4 de aplicación)');
    expect(hour(1, 1)).toBe('1 (1 de negocio)');
    expect(hour(0, 0)).toBe('0');
  });

  it('shows the kind on failed and dead-letter rows only', () => {
    expect(failureKind({ status: 'failed', exception_type: 'business' })).toBe('business');
    expect(failureKind({ status: 'dead_letter', exception_type: 'application' })).toBe('application');
    // retried after an application failure and completed: the record keeps the kind, the row does not show it
    expect(failureKind({ status: 'completed', exception_type: 'application' })).toBeNull();
    expect(failureKind({ status: 'failed', exception_type: null })).toBeNull();
    expect(es.exceptions.kinds.business).toBe('Excepción de negocio');
    expect(es.exceptions.kinds.application).toBe('Excepción de aplicación');
  });

  it('offers to retry business failures only when the filter can match them', () => {
    const items = (filter: ItemFilter) => ({ kind: 'items' as const, filter });
    expect(retryMayMeetBusiness(items({}))).toBe(true);
    expect(retryMayMeetBusiness(items({ status: 'failed' }))).toBe(true);
    expect(retryMayMeetBusiness(items({ exception_type: 'business' }))).toBe(true);
    expect(retryMayMeetBusiness(items({ status: 'dead_letter' }))).toBe(false);
    expect(retryMayMeetBusiness(items({ status: 'failed', exception_type: 'application' }))).toBe(false);
    expect(retryMayMeetBusiness({ kind: 'jobs', filter: {} })).toBe(true);
    expect(retryMayMeetBusiness({ kind: 'jobs', filter: { status: 'failed' } })).toBe(true);
    expect(retryMayMeetBusiness({ kind: 'jobs', filter: { status: 'timed_out' } })).toBe(false);
    // a filter of business failures only: the API refuses a retry without include_business
    expect(retryNeedsBusiness(items({ exception_type: 'business' }))).toBe(true);
    expect(retryNeedsBusiness(items({}))).toBe(false);
    expect(retryNeedsBusiness({ kind: 'jobs', filter: {} })).toBe(false);
  });
});
