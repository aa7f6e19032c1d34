import {
  NO_AUDIT_FILTERS, auditQuery, formatRuns, groupScopes, isoToLocalInput, keyState, localInputToIso, parseIpList, parseJsonObject,
} from '../src/lib/admin';

/** The admin pages' pure logic: scope groups, the IP list, input_data, the preview's dates, the audit query. */
describe('the console\'s admin helpers', () => {
  it('groups the scope catalogue in the order the API lists it', () => {
    const groups = groupScopes([
      { scope: 'assets:read', description: 'Leer assets', group: 'credentials' },
      { scope: 'queues:read', description: 'Leer', group: 'queues' },
      { scope: 'jobs:read', description: 'Leer', group: 'executions' },
      { scope: 'queues:write', description: 'Añadir', group: 'queues' },
    ]);
    expect(groups.map((g) => g.group)).toEqual(['credentials', 'queues', 'executions']);
    expect(groups[1]!.scopes.map((s) => s.scope)).toEqual(['queues:read', 'queues:write']);
    expect(groupScopes([])).toEqual([]);
  });

  it('reads the allowed IPs one per line or separated by commas, without repeats; none is no restriction (null)', () => {
    expect(parseIpList('10.0.0.1\n 192.168.0.0/24 , 10.0.0.1;2001:db8::/32')).toEqual(['10.0.0.1', '192.168.0.0/24', '2001:db8::/32']);
    expect(parseIpList('')).toBeNull();
    expect(parseIpList(' \n , ')).toBeNull();
  });

  it('accepts only a JSON object (or nothing) as input_data', () => {
    expect(parseJsonObject('')).toEqual({ ok: true, value: null });
    expect(parseJsonObject('  {"a": [1, 2]} ')).toEqual({ ok: true, value: { a: [1, 2] } });
    expect(parseJsonObject('{a: 1}')).toEqual({ ok: false, reason: 'syntax' });
    expect(parseJsonObject('[1]')).toEqual({ ok: false, reason: 'not-object' });
    expect(parseJsonObject('null')).toEqual({ ok: false, reason: 'not-object' });
    expect(parseJsonObject('"texto"')).toEqual({ ok: false, reason: 'not-object' });
  });

  it('shows the next runs in the given zone with its name, in Spanish', () => {
    const runs = ['2026-11-24T23:30:00Z', '2026-11-25T08:00:00Z'];
    const madrid = formatRuns(runs, 'es', 'Europe/Madrid');
    expect(madrid).toHaveLength(2);
    expect(madrid[0]).toMatch(/mi[ée]/); // 00:30 on Wednesday in Madrid, a Tuesday in UTC
    expect(madrid[0]).toContain('00:30:00');
    expect(madrid[0]).toContain('25');
    expect(madrid[1]).toContain('09:00:00');
    expect(formatRuns(runs, 'es', 'UTC')[0]).toContain('23:30:00');
    expect(formatRuns(runs, 'es', 'UTC')[0]).toContain('UTC');
    expect(formatRuns([], 'es', 'UTC')).toEqual([]);
  });

  it('turns a datetime-local value into an instant and back', () => {
    expect(localInputToIso('')).toBeNull();
    expect(localInputToIso('not a date')).toBeNull();
    const iso = localInputToIso('2026-11-24T10:15')!;
    expect(new Date(iso).getTime()).toBe(new Date(2026, 10, 24, 10, 15).getTime()); // read in the local zone
    expect(isoToLocalInput(iso)).toBe('2026-11-24T10:15');
  });

  it('builds the audit log query from the filters it has, with the cursor of the next page', () => {
    expect(auditQuery(NO_AUDIT_FILTERS, 50)).toEqual({ limit: 50 });
    const q = auditQuery({ ...NO_AUDIT_FILTERS, action: ' create_api_key ', actor_type: 'user', since: '2026-11-24T10:00' }, 25, 'abc');
    expect(q).toEqual({ limit: 25, action: 'create_api_key', actor_type: 'user', since: new Date(2026, 10, 24, 10, 0).toISOString(), cursor: 'abc' });
    expect(auditQuery({ ...NO_AUDIT_FILTERS, until: 'nonsense' }, 50)).toEqual({ limit: 50 });
  });

  it('says whether a key is active, expired or revoked', () => {
    const now = new Date('2026-11-24T12:00:00Z');
    expect(keyState({ is_active: true, expires_at: null }, now)).toBe('active');
    expect(keyState({ is_active: true, expires_at: '2026-11-25T00:00:00Z' }, now)).toBe('active');
    expect(keyState({ is_active: true, expires_at: '2026-11-24T11:59:59Z' }, now)).toBe('expired');
    expect(keyState({ is_active: false, expires_at: '2026-11-24T11:59:59Z' }, now)).toBe('revoked');
  });
});
