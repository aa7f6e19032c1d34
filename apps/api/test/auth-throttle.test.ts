import { createLogger, createRedis, RateLimitError, redisKeys } from '@svc/core';
import { createUser } from '@svc/core/internals';
import { freePort, seedApiKey, seedTenant, seedUser, waitFor } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { createHashGate } from '../src/auth/hash-gate';
import { ACCOUNT_FREE_FAILURES, LOOKUPS_IN_FLIGHT, PAIR_FREE_FAILURES, addressOf, createAuthThrottle } from '../src/auth/throttle';

/** Waits of 4 s per unit: long enough that a loaded machine still sees a wait it just started. */
const UNIT = 4;

/**
 * Guessing credentials: sign-ins throttled per account and address with growing waits, every
 * failure audited, the account-wide wait bounded and never for the account's usual address; and a
 * per-address budget of failed credential checks that answers before any look-up.
 */

const PASSWORD = 'correct horse battery';
let n = 0;
const address = () => `198.51.100.${(n++ % 250) + 1}`;

describe('sign-in throttling', () => {
  let t: ApiTestContext;
  let tenantId: string;

  beforeAll(async () => {
    // X-Forwarded-For names the client: each test uses addresses of its own
    t = await createApiTestContext({ trustedProxyCount: 1, authFailuresPerAddress: 1000 }, {
      deps: (ctx) => ({
        authThrottle: createAuthThrottle({
          redis: ctx.redis, keys: redisKeys(ctx.config.redisPrefix), logger: createLogger({ service: 'test', silent: true }), failuresPerAddress: 1000, unitSeconds: UNIT,
        }),
      }),
    });
    tenantId = (await seedTenant(t.sql)).id;
  });
  afterAll(() => t.close());

  const login = (email: string, password: string, from: string) =>
    t.http.post('/api/v1/auth/login').set('X-Forwarded-For', from).send({ email, password });
  const newUser = async () => {
    const email = `u${n++}@throttle.test`;
    await createUser(t.sql, tenantId, { email, password: PASSWORD, role: 'admin' });
    return email;
  };

  it('lets a pair of account and address fail five times, then makes it wait longer after each failure, until a success', async () => {
    const email = await newUser();
    const from = address();
    for (let i = 0; i < PAIR_FREE_FAILURES; i++) expect((await login(email, 'wrong password', from)).status).toBe(401);
    // the sixth failure still checks the password, and starts a wait of one unit
    expect((await login(email, 'wrong password', from)).status).toBe(401);
    const blocked = await login(email, PASSWORD, from);
    expect(blocked.status).toBe(429);
    expect(blocked.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' } });
    expect(blocked.body.error.message).toMatch(/intentos de inicio de sesión/);
    expect(Number(blocked.headers['retry-after'])).toBeLessThanOrEqual(UNIT);
    // another address is not held by this pair's wait
    expect((await login(email, PASSWORD, address())).status).toBe(200);

    // polled a few times a second: the route's own limit per address is 120 a minute
    const pause = () => new Promise((r) => setTimeout(r, 250));
    const waitOut = async () => {
      let res;
      while ((res = await login(email, 'wrong password', from)).status === 429) await pause();
      return res;
    };
    // the wait passes; the next failure doubles it
    expect((await waitOut()).status).toBe(401);
    const longer = await login(email, PASSWORD, from);
    expect(longer.status).toBe(429);
    expect(Number(longer.headers['retry-after'])).toBeGreaterThan(UNIT);
    expect(Number(longer.headers['retry-after'])).toBeLessThanOrEqual(2 * UNIT);

    // a success from the pair resets it: five free failures again
    let ok;
    while ((ok = await login(email, PASSWORD, from)).status === 429) await pause();
    expect(ok.status).toBe(200);
    for (let i = 0; i < PAIR_FREE_FAILURES; i++) expect((await login(email, 'wrong password', from)).status).toBe(401);
  });

  it('audits every failed sign-in in the account\'s workspace, without the password', async () => {
    const email = await newUser();
    const from = address();
    await login(email, 'the-wrong-secret-1', from);
    await login(email, 'the-wrong-secret-2', from);
    await t.sql`update users set is_active = false where email = ${email}`;
    await login(email, PASSWORD, from);
    const rows = await t.sql<{ action: string; details: Record<string, unknown>; ip: string; resource_type: string }[]>`
      select a.action, a.details, a.ip, a.resource_type from audit_log a join users u on u.id = a.resource_id
      where u.email = ${email} order by a.id`;
    expect(rows.map((r) => [r.action, r.details.reason, r.ip, r.resource_type])).toEqual([
      ['login_failed', 'wrong_password', from, 'user'],
      ['login_failed', 'wrong_password', from, 'user'],
      ['login_failed', 'inactive_user', from, 'user'],
    ]);
    const text = JSON.stringify(rows);
    expect(text).not.toContain('the-wrong-secret');
    expect(text).not.toContain(PASSWORD);
  });

  it('holds an account guessed from many addresses off for at most a minute, and never from the address it signs in from', async () => {
    const email = await newUser();
    const home = address();
    expect((await login(email, PASSWORD, home)).status).toBe(200);
    // one failure from each of many addresses: no pair reaches its own limit
    for (let i = 0; i <= ACCOUNT_FREE_FAILURES; i++) expect((await login(email, 'wrong password', address())).status).toBe(401);
    const stranger = await login(email, PASSWORD, address());
    expect(stranger.status).toBe(429);
    expect(Number(stranger.headers['retry-after'])).toBeLessThanOrEqual(60 * UNIT);
    // the real user's usual address is not held off
    expect((await login(email, PASSWORD, home)).status).toBe(200);
  });

  it('checks one password at a time per account and address, so parallel guesses get no more tries', async () => {
    const email = await newUser();
    const from = address();
    const answers = await Promise.all(Array.from({ length: 30 }, () => login(email, 'wrong password', from)));
    const statuses = answers.map((r) => r.status);
    // each guess that reached the password check was refused one at a time: at most the free ones
    // and the one that started the wait
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(PAIR_FREE_FAILURES + 1);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(30 - PAIR_FREE_FAILURES - 1);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    const [{ n }] = await t.sql<{ n: number }[]>`
      select count(*)::int as n from audit_log a join users u on u.id = a.resource_id where u.email = ${email} and a.action = 'login_failed'`;
    expect(n).toBe(statuses.filter((s) => s === 401).length);
  });

  it('counts an IPv6 client by its /64, so a subscriber cannot rotate addresses around the waits', async () => {
    expect(addressOf('2001:db8:1:2::1')).toBe(addressOf('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'));
    expect(addressOf('2001:db8:1:2::1')).not.toBe(addressOf('2001:db8:1:3::1'));
    expect(addressOf('198.51.100.7')).toBe('198.51.100.7');
    const email = await newUser();
    for (let i = 0; i <= PAIR_FREE_FAILURES; i++) expect((await login(email, 'wrong password', `2001:db8:77:1::${i + 1}`)).status).toBe(401);
    expect((await login(email, PASSWORD, '2001:db8:77:1::abcd')).status).toBe(429);
  });

  it('throttles an unknown e-mail like a real one, so a wait tells nothing about which accounts exist', async () => {
    const from = address();
    for (let i = 0; i <= PAIR_FREE_FAILURES; i++) expect((await login('nobody-here@throttle.test', 'x', from)).status).toBe(401);
    expect((await login('nobody-here@throttle.test', 'x', from)).status).toBe(429);
  });
});

describe('failed credential budget per address', () => {
  let t: ApiTestContext;

  beforeAll(async () => {
    t = await createApiTestContext({ trustedProxyCount: 1, authFailuresPerAddress: 5 });
  });
  afterAll(() => t.close());

  it('answers 429 before looking up any key or token once an address has failed its budget, and only for that address', async () => {
    const tenant = await seedTenant(t.sql);
    const cached = await seedApiKey(t.sql, tenant.id, { scopes: ['processes:read'] });
    const fresh = await seedApiKey(t.sql, tenant.id, { scopes: ['processes:read'] });
    const { token } = await seedUser(t.sql, tenant.id, { role: 'admin' });
    const attacker = address();
    const list = (key: string, from: string) => t.http.get('/api/v1/processes/list').set('X-Forwarded-For', from).set('X-API-Key', key);
    // the key is in the cache from another address's use
    expect((await list(cached.key, address())).status).toBe(200);

    for (let i = 0; i < 5; i++) expect((await list(`svc_ak_guess${i}${'x'.repeat(40)}`, attacker)).status).toBe(401);
    const refused = await list('svc_ak_another_guess' + 'y'.repeat(40), attacker);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // a valid key nobody has used yet would pass a look-up: refused all the same, so none was made
    expect((await list(fresh.key, attacker)).status).toBe(429);
    expect((await t.http.get('/api/v1/auth/me').set('X-Forwarded-For', attacker).set('Authorization', `Bearer ${token}`)).status).toBe(429);
    // a key answered from memory costs nothing and still works from there
    expect((await list(cached.key, attacker)).status).toBe(200);
    // another address is not affected
    expect((await list(fresh.key, address())).status).toBe(200);
    expect((await t.http.get('/api/v1/auth/me').set('X-Forwarded-For', address()).set('Authorization', `Bearer ${token}`)).status).toBe(200);
  });

  it('keeps concurrent guesses near the budget: only a few look-ups of an address run at once', async () => {
    const attacker = address();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      t.http.get('/api/v1/auth/me').set('X-Forwarded-For', attacker).set('Authorization', `Bearer svc_at_concurrent${i}`)));
    const looked = answers.filter((r) => r.status === 401).length;
    expect(looked).toBeGreaterThanOrEqual(5);
    expect(looked).toBeLessThan(5 + LOOKUPS_IN_FLIGHT);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(30 - looked);
  });

  it('never refuses an address for many valid credentials at once (a client warming its keys)', async () => {
    const tenant = await seedTenant(t.sql);
    const keys = await Promise.all(Array.from({ length: 40 }, () => seedApiKey(t.sql, tenant.id, { scopes: ['processes:read'] })));
    const from = address();
    const answers = await Promise.all(keys.map((k) => t.http.get('/api/v1/processes/list').set('X-Forwarded-For', from).set('X-API-Key', k.key)));
    expect(answers.map((r) => r.status)).toEqual(keys.map(() => 200));
  });

  it('counts only failures: an address using good tokens never runs out', async () => {
    const tenant = await seedTenant(t.sql);
    const { token } = await seedUser(t.sql, tenant.id, { role: 'admin' });
    const from = address();
    for (let i = 0; i < 12; i++) {
      expect((await t.http.get('/api/v1/auth/me').set('X-Forwarded-For', from).set('Authorization', `Bearer ${token}`)).status).toBe(200);
    }
  });

  it('shares the budget across replicas: a replica that never saw the address lets one more look-up through, then refuses', async () => {
    const make = () => createAuthThrottle({ redis: t.redis, keys: redisKeys(t.config.redisPrefix), logger: createLogger({ service: 'test', silent: true }), failuresPerAddress: 5 });
    const [a, b] = [make(), make()];
    const attacker = address();
    for (let i = 0; i < 5; i++) (await a.beforeLookup(attacker)).settle(false);
    const refuses = (replica: typeof a) => async () => replica.beforeLookup(attacker).then((turn) => {
      turn.settle(true);
      return false;
    }, (err) => err instanceof RateLimitError);
    // the failures are counted in the background; then the replica that saw them refuses
    await waitFor('the replica that counted them to refuse', refuses(a));
    // the other replica has no failure of the address in mind: one look-up, whose failure tells it
    const once = await b.beforeLookup(attacker);
    once.settle(false);
    await waitFor('the other replica to refuse too', refuses(b));
  });

  it('charges refused access tokens too', async () => {
    const attacker = address();
    const me = (token: string) => t.http.get('/api/v1/auth/me').set('X-Forwarded-For', attacker).set('Authorization', `Bearer ${token}`);
    for (let i = 0; i < 5; i++) expect((await me(`svc_at_guess${i}`)).status).toBe(401);
    expect((await me('svc_at_guess-again')).status).toBe(429);
  });
});

describe('sign-in with Redis unreachable', () => {
  let t: ApiTestContext;
  let deadRedis: ReturnType<typeof createRedis>;

  beforeAll(async () => {
    deadRedis = createRedis(`redis://127.0.0.1:${await freePort()}`, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    deadRedis.on('error', () => undefined);
    t = await createApiTestContext({}, {
      deps: (ctx) => ({
        authThrottle: createAuthThrottle({ redis: deadRedis, keys: redisKeys(ctx.config.redisPrefix), logger: createLogger({ service: 'test', silent: true }), failuresPerAddress: 60 }),
      }),
    });
  });
  afterAll(async () => {
    await t.close();
    deadRedis.disconnect();
  });

  it('still signs in with the right password and refuses a wrong one, counting in the process', async () => {
    const tenant = await seedTenant(t.sql);
    await createUser(t.sql, tenant.id, { email: 'offline-redis@throttle.test', password: PASSWORD, role: 'admin' });
    const ok = await t.http.post('/api/v1/auth/login').send({ email: 'offline-redis@throttle.test', password: PASSWORD });
    expect(ok.status).toBe(200);
    expect(ok.body.data.access_token).toMatch(/^svc_at_/);
    const wrong = await t.http.post('/api/v1/auth/login').send({ email: 'offline-redis@throttle.test', password: 'nope nope' });
    expect(wrong.status).toBe(401);
  });
});

describe('the password hashing gate', () => {
  it('runs at most its concurrency at once, queues a bounded number and refuses the rest with a 429', async () => {
    const gate = createHashGate(1, 2);
    let running = 0;
    let most = 0;
    const releases: Array<() => void> = [];
    const work = () =>
      gate.run(async () => {
        running++;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
      });
    const runs = [work(), work(), work()];
    await expect(work()).rejects.toBeInstanceOf(RateLimitError);
    while (runs.length) {
      while (releases.length === 0) await new Promise((r) => setImmediate(r));
      releases.shift()!();
      await runs.shift();
    }
    expect(most).toBe(1);
  });
});
