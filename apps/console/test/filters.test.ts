import { nextFilterParams } from '../src/lib/filters';

describe('nextFilterParams', () => {
  it('sets and removes filters and starts again on page 1', () => {
    expect(nextFilterParams('?status=failed&page=4&q=x', { status: 'completed', q: '' }).toString()).toBe('status=completed');
  });
  it('keeps the other filters when only the page changes', () => {
    expect(nextFilterParams('?status=failed&page=4', { page: '5' }).toString()).toBe('status=failed&page=5');
  });
  it('builds on the current address, so two quick changes both stay', () => {
    const first = nextFilterParams('', { status: 'failed' });
    expect(nextFilterParams(`?${first}`, { machine_id: 'm1' }).toString()).toBe('status=failed&machine_id=m1');
  });
});
