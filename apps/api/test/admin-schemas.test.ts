import { seedUser } from '@svc/testing';
import type { ApiTestContext } from '@svc/testing/api';
import { jobCount, jobRouteSuite, seedWorkspace, type Workspace } from './jobs-support';
import { bearer } from './settings-fixtures';

/**
 * A workspace admin writes the input_schema of a process; the webhook trigger validates every
 * caller's input_data against it. Whatever the schema holds, it must cost little and only its own
 * workspace (docs/decisions/admin-schemas.md).
 */
describe('admin-supplied input schemas', () => {
  const suite = jobRouteSuite();
  let t: ApiTestContext;
  let w: Workspace;
  let admin: string;
  let other: Workspace;
  beforeAll(() => ({ t } = suite));
  beforeEach(async () => {
    ({ w } = suite);
    admin = (await seedUser(t.sql, w.tenant.id, { role: 'admin' })).token;
    other = await seedWorkspace(t.sql);
  });

  let n = 0;
  const saveProcess = (input_schema: unknown) =>
    t.http.post('/api/v1/settings/processes').set(bearer(admin)).send({ name: `schema-${++n}`, input_schema });
  const hook = (processId: string, input_data: unknown, key = w.key) =>
    t.http.post(`/api/v1/webhooks/trigger/${processId}`).set('X-API-Key', key).send({ machine_id: w.machine.id, input_data });
  const legacyProcess = async (schema: object) =>
    (await t.sql<{ id: string }[]>`
      insert into processes (tenant_id, name, input_schema) values (${w.tenant.id}, ${`legacy-${++n}`}, ${t.sql.json(schema as never)})
      returning id`)[0]!.id;
  const props = (count: number, each: object = { type: 'string' }) =>
    Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${i}`, each]));
  const nested = (depth: number): object => (depth === 0 ? { type: 'string' } : { type: 'object', properties: { a: nested(depth - 1) } });

  /**
   * Tenant B's requests sent while `busy` runs: each must succeed. No latency bound (the host's load
   * decides latencies); what proves that a hostile schema costs little is that each hostile input
   * below is sized so that the unguarded engine would not finish before the test's timeout (2^40
   * steps, a quadratic scan of a megabyte), while the guarded one answers at once.
   */
  async function otherTenantServedDuring(busy: Promise<unknown>): Promise<number> {
    let done = false;
    void busy.finally(() => (done = true));
    let served = 0;
    do {
      const res = await t.http.get('/api/v1/processes/list').set('X-API-Key', other.key);
      expect(res.status).toBe(200);
      served++;
    } while (!done);
    await busy;
    return served;
  }

  describe('when saved (422 naming the limit)', () => {
    it.each([
      ['over 64 KiB', { type: 'object', description: 'x'.repeat(66_000) }, 'input_schema supera el límite de tamaño en bytes: 66034 (máximo 65536)'],
      ['nested over 32 levels', nested(16), 'input_schema supera el límite de anidamiento: más de 32 niveles'],
      ['with over 500 subschemas', { type: 'object', properties: props(500) }, 'input_schema supera el límite de subesquemas: 501 (máximo 500)'],
      ['with over 100 patterns', { type: 'object', properties: props(101, { type: 'string', pattern: '^a' }) },
        'input_schema supera el límite de patrones (pattern y patternProperties): 101 (máximo 100)'],
    ])('refuses an input_schema %s', async (_label, schema, message) => {
      const res = await saveProcess(schema);
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field: 'body → input_schema', message }]);
    });

    it.each([
      ['a backreference', { properties: { code: { pattern: '^(a)\\1$' } } }, 'body → input_schema → properties → code → pattern',
        'patrón no admitido: las referencias hacia atrás (\\1, \\k<nombre>) no están admitidas'],
      ['a lookahead in patternProperties', { patternProperties: { '^(?!x)': { type: 'string' } } }, 'body → input_schema → patternProperties → ^(?!x)',
        'patrón no admitido: las aserciones lookahead / lookbehind ((?=…), (?!…), (?<=…), (?<!…)) no están admitidas'],
      ['a pattern over 512 characters', { properties: { code: { pattern: 'a'.repeat(513) } } }, 'body → input_schema → properties → code → pattern',
        'patrón no admitido: el patrón tiene 513 caracteres (máximo 512)'],
      ['a $ref into an enum value', { enum: [{ type: 'string' }], $ref: '#/enum/0' }, 'body → input_schema → $ref',
        'referencia no admitida: solo se admiten referencias locales (# o #/…) a un subesquema del mismo input_schema'],
      ['an $id below the root', { properties: { a: { $id: 'https://example.test/a', type: 'string' } } }, 'body → input_schema → properties → a → $id',
        '$id solo se admite en la raíz del schema'],
    ])('refuses an input_schema with %s, naming where and why', async (_label, schema, field, message) => {
      const res = await saveProcess(schema);
      expect(res.status).toBe(422);
      expect(res.body.error.details).toEqual([{ field, message }]);
      const made = (await saveProcess({ type: 'object' })).body.data;
      const patched = await t.http.patch(`/api/v1/settings/processes/${made.id}`).set(bearer(admin)).send({ input_schema: schema });
      expect(patched.status).toBe(422);
      expect(patched.body.error.details).toEqual([{ field, message }]);
    });

    it('accepts a schema at the limits: 500 subschemas, patterns in RE2 syntax, unicode classes, $defs and recursion', async () => {
      const schema = {
        type: 'object',
        $defs: { node: { type: 'array', items: { $ref: '#/$defs/node' } } },
        properties: { ...props(494), tree: { $ref: '#/$defs/node' }, code: { type: 'string', pattern: '^\\p{Lu}{2}-\\d{4}$' } },
        patternProperties: { '^x-[a-z]+$': { type: 'string' } },
      };
      const res = await saveProcess(schema);
      expect(res.status).toBe(201);
      const ok = await hook(res.body.data.id, { code: 'ÑA-2024', tree: [[[]]], 'x-id': 'a' });
      expect(ok.status).toBe(201);
      const bad = await hook(res.body.data.id, { code: 'ña-2024', 'x-id': 1 });
      expect(bad.status).toBe(422);
      expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['body → input_data → code', 'body → input_data → x-id']);
    });
  });

  describe('when a webhook is validated', () => {
    it('keeps answering another workspace while one keeps sending input that a nested quantifier or the url format would never finish', async () => {
      const res = await saveProcess({ type: 'object', properties: { code: { type: 'string', pattern: '^(a+)+$' }, link: { type: 'string', format: 'url' } } });
      expect(res.status).toBe(201);
      // a backtracking engine needs 2^60 steps for the first, a quadratic url check ~10^12 for the second
      const hostile = [{ code: `${'a'.repeat(60)}!` }, { link: `http://${':'.repeat(1_000_000)}` }];
      const answers: Array<{ status: number; body: any }> = [];
      const hammer = (async () => {
        for (let i = 0; i < 6; i++) answers.push(await hook(res.body.data.id, hostile[i % 2]));
      })();
      expect(await otherTenantServedDuring(hammer)).toBeGreaterThanOrEqual(1);
      expect(answers.map((a) => a.status)).toEqual([422, 422, 422, 422, 422, 422]);
      expect(answers[0]!.body.error.message).toBe('input_data no cumple el schema del proceso: input_data → code: debe coincidir con el patron "^(a+)+$"');
      expect(answers[1]!.body.error.message).toBe('input_data no cumple el schema del proceso: input_data → link: debe coincidir con el formato "url"');
    });

    it('stops a schema whose references multiply (each level using the next twice) at its time budget, with a 422', async () => {
      // 40 levels: 2^40 applications, which no machine finishes without the budget; with it, 250 ms
      const defs: Record<string, object> = { d40: { type: 'integer' } };
      for (let i = 0; i < 40; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
      const res = await saveProcess({ type: 'object', properties: { v: { $ref: '#/$defs/d0' } }, $defs: defs });
      expect(res.status).toBe(201);
      const busy = hook(res.body.data.id, { v: 7 }).then((r) => r);
      expect(await otherTenantServedDuring(busy)).toBeGreaterThanOrEqual(1);
      const answer = await busy;
      expect(answer.status).toBe(422);
      expect(answer.body.error).toMatchObject({
        code: 'VALIDATION_ERROR',
        message: 'input_data no cumple el schema del proceso: la validación superó su tiempo máximo (250 ms): el input_schema del proceso es demasiado costoso para estos datos',
        details: [{ field: 'body → input_data', message: expect.stringMatching(/^la validación superó su tiempo máximo/) }],
      });
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
    });

    it('checks uniqueItems over a large array in linear time, objects equal whatever their key order', async () => {
      const res = await saveProcess({ type: 'object', properties: { rows: { type: 'array', uniqueItems: true } } });
      // 8,000 rows: linear checking takes a few ms, leaving the 250 ms budget room on a loaded machine,
      // while pairwise comparison (32 million deep-equal calls) would blow the budget many times over
      const rows = Array.from({ length: 8_000 }, (_, i) => ({ id: i, tag: 'x' }));
      const busy = hook(res.body.data.id, { rows }).then((r) => r);
      expect(await otherTenantServedDuring(busy)).toBeGreaterThanOrEqual(1);
      const answer = await busy;
      expect([answer.status, answer.body.error]).toEqual([201, undefined]);
      const dup = await hook(res.body.data.id, { rows: [{ id: 1, tag: 'x' }, { id: 2 }, { tag: 'x', id: 1 }] });
      expect(dup.status).toBe(422);
      expect(dup.body.error.details).toEqual([{ field: 'body → input_data → rows', message: 'no debe contener elementos duplicados, (los elementos ## 2 y 0 son idénticos)' }]);
    });

    it('validates deep input against a recursive $ref, and answers 422 (never 500) when it is nested too deep to validate', async () => {
      const res = await saveProcess({ type: 'object', properties: { tree: { $ref: '#/$defs/node' } }, $defs: { node: { type: 'array', items: { $ref: '#/$defs/node' } } } });
      // sent as text: the test client's own serializer would overflow on it
      const deep = (levels: number) =>
        t.http.post(`/api/v1/webhooks/trigger/${res.body.data.id}`).set('X-API-Key', w.key).set('Content-Type', 'application/json')
          .send(`{"machine_id":"${w.machine.id}","input_data":{"tree":${'['.repeat(levels)}${']'.repeat(levels)}}}`);
      expect((await deep(60)).status).toBe(201);
      const tooDeep = await deep(20_000);
      expect(tooDeep.status).toBe(422);
      expect(tooDeep.body.error.code).toBe('VALIDATION_ERROR');
    });

    it('lists at most the first 100 violations', async () => {
      const res = await saveProcess({ type: 'object', properties: { ids: { type: 'array', items: { type: 'string' } } } });
      const answer = await hook(res.body.data.id, { ids: Array.from({ length: 5000 }, (_, i) => i) });
      expect(answer.status).toBe(422);
      expect(answer.body.error.details).toHaveLength(100);
      expect(answer.body.error.message).toMatch(/input_data → ids → 99: debe ser string; \(y más\)$/);
    });
  });

  describe('a schema stored before the limits existed', () => {
    it('is refused on trigger with a 422 naming the limit, without holding up another workspace', async () => {
      // about 1 MB with a pattern on every property: compiling it took many seconds
      const processId = await legacyProcess({ type: 'object', properties: props(20_000, { type: 'string', pattern: '^[a-z]+[0-9]*$' }) });
      const busy = hook(processId, { f1: 'abc' }).then((r) => r);
      expect(await otherTenantServedDuring(busy)).toBeGreaterThanOrEqual(1);
      const answer = await busy;
      expect(answer.status).toBe(422);
      expect(answer.body.error.message).toMatch(
        /^input_data no cumple el schema del proceso: el input_schema del proceso no se puede usar \(input_schema supera el límite de tamaño en bytes: \d+ \(máximo 65536\)\); corríjalo en la configuración del proceso$/,
      );
      expect((await hook(processId, { f1: 'abc' })).status).toBe(422);
    });

    it('is refused on trigger when its pattern needs backtracking', async () => {
      const processId = await legacyProcess({ type: 'object', properties: { code: { type: 'string', pattern: '^(\\w+)-\\1$' } } });
      const answer = await hook(processId, { code: 'ab-ab' });
      expect(answer.status).toBe(422);
      expect(answer.body.error.details).toEqual([{
        field: 'body → input_data',
        message: 'el input_schema del proceso no se puede usar (patrón no admitido: las referencias hacia atrás (\\1, \\k<nombre>) no están admitidas); corríjalo en la configuración del proceso',
      }]);
      expect(await jobCount(t.sql, w.tenant.id)).toBe(0);
    });
  });
});
