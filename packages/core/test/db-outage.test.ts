import { DbOutage, createSql, isConnectionError, retryOnConnectionLoss, type Logger } from '@svc/core';

/** Pure logic around Postgres outages; the real outages are in apps/dispatcher/test/fault-postgres-restart.test.ts. */

function recordingLogger() {
  const lines: Array<{ level: string; message: string; meta: Record<string, unknown> }> = [];
  const at = (level: string) => (message: string, meta: Record<string, unknown> = {}) => lines.push({ level, message, meta });
  return { lines, logger: { warn: at('warn'), info: at('info'), error: at('error'), debug: at('debug') } as unknown as Logger };
}

const pgError = (code: string, severity = 'ERROR') => Object.assign(new Error(code), { name: 'PostgresError', code, severity });
const sockError = (code: string) => Object.assign(new Error(code), { code });

describe('isConnectionError', () => {
  it('tells a lost or refused connection from every other failure', () => {
    for (const e of [sockError('CONNECTION_CLOSED'), sockError('ECONNRESET'), sockError('ECONNREFUSED'), sockError('CONNECT_TIMEOUT'),
      pgError('57P01', 'FATAL'), pgError('57P03', 'FATAL'), pgError('08006'), pgError('XX000', 'FATAL')]) {
      expect([e.message, isConnectionError(e)]).toEqual([e.message, true]);
    }
    for (const e of [pgError('23505'), pgError('40001'), pgError('57014'), sockError('CONNECTION_ENDED'), sockError('UNSAFE_TRANSACTION'),
      new TypeError('x'), null, 'ECONNRESET']) {
      expect(isConnectionError(e)).toBe(false);
    }
  });

  it('recognises what postgres.js really throws when nothing listens', async () => {
    const sql = createSql('postgres://postgres@127.0.0.1:1/none', { max: 1 });
    try {
      const err = await sql`select 1`.then(() => null, (e: unknown) => e);
      expect(isConnectionError(err)).toBe(true);
    } finally {
      await sql.end({ timeout: 0 });
    }
  });
});

describe('DbOutage and retryOnConnectionLoss', () => {
  it('logs an outage once when it starts and once when it ends, however many attempts fail', async () => {
    const { lines, logger } = recordingLogger();
    // the outage's own clock, so how long ago it recovered is exact however slow the host is
    let now = 10_000;
    const outage = new DbOutage(logger, () => now);
    let calls = 0;
    const value = await retryOnConnectionLoss(async () => {
      calls++;
      now += 100;
      if (calls < 6) throw sockError('ECONNREFUSED');
      return 'answered';
    }, { outage, context: 'test', minDelayMs: 1, maxDelayMs: 4 });
    expect(value).toBe('answered');
    expect(calls).toBe(6);
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ['warn', 'Postgres unreachable: retrying with back-off until it answers'],
      ['info', 'Postgres reachable again'],
    ]);
    expect(lines[1]!.meta.down_ms).toBe(500);
    expect(outage.down).toBe(false);
    now += 250;
    expect(outage.msSinceRecovery()).toBe(250);
  });

  it('throws any other error at once, and gives up when its signal is aborted', async () => {
    const { logger } = recordingLogger();
    const outage = new DbOutage(logger);
    let calls = 0;
    await expect(retryOnConnectionLoss(async () => {
      calls++;
      throw pgError('23505');
    }, { outage, context: 'test', minDelayMs: 1 })).rejects.toThrow('23505');
    expect(calls).toBe(1);

    const ctrl = new AbortController();
    const pending = retryOnConnectionLoss(async () => {
      throw sockError('ECONNRESET');
    }, { outage, context: 'test', minDelayMs: 10_000, signal: ctrl.signal });
    setTimeout(() => ctrl.abort(), 20);
    await expect(pending).rejects.toThrow('ECONNRESET');
    expect(outage.down).toBe(true);
    expect(outage.msSinceRecovery()).toBe(0);
  });

  it('folds a failure just after the recovery into the outage, unless the database stays away', () => {
    const { lines, logger } = recordingLogger();
    let now = 0;
    const outage = new DbOutage(logger, () => now);
    const lost = sockError('CONNECTION_CLOSED');
    outage.failed(lost, 'a');
    now = 300;
    outage.ok();
    // the stale error of a reconnected connection, a second later: nothing logged
    now = 1300;
    outage.failed(lost, 'b');
    now = 1400;
    outage.ok();
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
    // down again just after, and for good this time: said once it lasted the settle time
    now = 2000;
    outage.failed(lost, 'c');
    now = 4000;
    outage.failed(lost, 'c');
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
    now = 7100;
    outage.failed(lost, 'c');
    now = 9000;
    outage.failed(lost, 'c');
    outage.ok();
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info', 'warn', 'info']);
  });
});
