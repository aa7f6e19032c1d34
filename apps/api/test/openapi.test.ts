import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { Type } from '@sinclair/typebox';
import { Nullable, Uuid } from '@svc/core/schemas';
import { seedApiKey, seedProcess, seedTenant } from '@svc/testing';
import { createApiTestContext, type ApiTestContext } from '@svc/testing/api';
import { routeCatalog } from '../src/http/route';
import { apiRouterOf, openApiDocumentFor } from '../src/openapi/routes';
import { buildOpenApiDocument, mountedRoutes, routeErrorStatuses, routeRateLimit, toOpenApiPath, type OpenApiDocument } from '../src/openapi/document';
import { SchemaRegistry } from '../src/openapi/json-schema';
import { renderEndpointTable, renderEndpointsMarkdown, spliceReadmeTable } from '../src/openapi/endpoint-table';

const ROOT = path.resolve(__dirname, '../../..');
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The standard validator is ESM-only: run it in a child Node process, the document on stdin. */
function validateWithStandardValidator(doc: unknown): { valid: boolean; version: string; errors: unknown; refs: true | string } {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    const v = new Validator();
    const res = await v.validate(JSON.parse(text));
    let refsResolve = true;
    if (res.valid) { try { v.resolveRefs(); } catch (e) { refsResolve = String(e); } }
    process.stdout.write(JSON.stringify({ valid: res.valid, version: v.version, errors: res.errors ?? null, refs: refsResolve }));
  `;
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, input: JSON.stringify(doc), encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`validator failed to run: ${out.stderr}`);
  return JSON.parse(out.stdout);
}

type Operation = Record<string, any>;

function operations(doc: OpenApiDocument): Array<{ path: string; method: string; op: Operation }> {
  const out: Array<{ path: string; method: string; op: Operation }> = [];
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const m of METHODS) if (item[m]) out.push({ path: p, method: m, op: item[m] as Operation });
  }
  return out;
}

/** Compiles the schema found at a JSON pointer of the document (refs to components resolve). */
function schemaValidator(doc: OpenApiDocument, pointer: string[]) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ ...doc, $id: 'openapi.json' } as never);
  const fragment = pointer.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');
  const fn = ajv.getSchema(`openapi.json#/${fragment}`);
  if (!fn) throw new Error(`no schema at ${pointer.join(' / ')}`);
  return fn;
}

describe('GET /api/v1/openapi.json', () => {
  let t: ApiTestContext;
  let doc: OpenApiDocument;
  beforeAll(async () => {
    t = await createApiTestContext();
    const res = await t.http.get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
  });
  afterAll(() => t.close());

  it('serves the document unwrapped, without credentials, as JSON', async () => {
    const res = await t.http.get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.success).toBeUndefined();
    expect(res.body.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
  });

  it('passes the standard OpenAPI validator as version 3.1, with every $ref resolving', () => {
    const result = validateWithStandardValidator(doc);
    expect(result.errors).toBeNull();
    expect(result).toEqual({ valid: true, version: '3.1', errors: null, refs: true });
  });

  it('lists every route the app router serves, with its method, and nothing else', () => {
    const served = new Set(
      mountedRoutes(apiRouterOf(t.app))
        .filter((r) => r.method !== 'head')
        .map((r) => `${r.method} ${toOpenApiPath(r.path)}`),
    );
    const documented = new Set(operations(doc).map((o) => `${o.method} ${o.path}`));
    expect(served.size).toBeGreaterThan(0);
    expect([...documented].sort()).toEqual([...served].sort());
  });

  it('describes each route from its addRoute declaration (no route bypasses the catalogue)', () => {
    const undeclared = operations(doc).filter((o) => o.op['x-undeclared']).map((o) => `${o.method} ${o.path}`);
    expect(undeclared).toEqual([]);
    for (const { path: p, method, op } of operations(doc)) {
      const spec = routeCatalog.get(`${method} ${p.replace(/^\/api\/v1/, '').replace(/\{([^}]+)\}/g, ':$1')}`)!;
      expect(spec).toBeDefined();
      expect(op.summary).toBe(spec.summary);
      expect(op.tags).toEqual(spec.tags);
      expect(op['x-rate-limit']).toEqual({ limit: routeRateLimit(spec), window_seconds: 60 });
      // every status the route can answer, with the error envelope
      const statuses = Object.keys(op.responses).map(Number).sort((a, b) => a - b);
      expect(statuses).toEqual([spec.successStatus ?? 200, ...routeErrorStatuses(spec)].sort((a, b) => a - b));
      for (const s of routeErrorStatuses(spec)) {
        const ref = op.responses[String(s)].content['application/json'].schema.$ref;
        expect(ref).toBe(s === 422 ? '#/components/schemas/ValidationErrorResponse' : '#/components/schemas/ErrorResponse');
      }
      expect(op.responses['429'].headers).toHaveProperty('Retry-After');
      // security follows the auth kind
      if (spec.auth.kind === 'api_key') {
        expect(op.security).toEqual([{ ApiKeyAuth: spec.auth.scope ? [spec.auth.scope] : [] }]);
        expect(statuses).toEqual(expect.arrayContaining([401, 403, 429, 500]));
      } else if (spec.auth.kind === 'user') {
        expect(op.security).toEqual([{ BearerAuth: spec.auth.admin ? ['admin'] : [] }]);
        expect(statuses).toEqual(expect.arrayContaining(spec.auth.admin ? [401, 403, 429] : [401, 429]));
      } else {
        expect(op.security).toEqual([]);
      }
      if (spec.body) {
        expect(op.requestBody).toMatchObject({ required: true });
        expect(op.requestBody.content['application/json'].schema).toEqual(new SchemaRegistry().convert(spec.body));
        expect(statuses).toEqual(expect.arrayContaining([413, 422]));
      }
      if (spec.params) {
        const names = Object.keys(spec.params.properties);
        expect(op.parameters.filter((x: any) => x.in === 'path').map((x: any) => x.name).sort()).toEqual(names.sort());
      }
    }
  });

  it('declares the two security schemes and the rate-limit headers', () => {
    expect(doc.components.securitySchemes).toEqual({
      ApiKeyAuth: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-API-Key' }),
      BearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    expect(Object.keys(doc.components.headers as object)).toEqual(
      expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After', 'X-Request-Id']),
    );
  });

  it('describes the public reads with the schemas that validate them', () => {
    const list = doc.paths['/api/v1/processes/list']!.get as Operation;
    const params = Object.fromEntries(list.parameters.map((p: any) => [p.name, p]));
    expect(params.page).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 500, default: 1 } });
    expect(params.limit).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } });
    expect(params.folder_id).toMatchObject({ in: 'query', required: false, schema: { type: 'string', format: 'uuid' } });
    expect(list.security).toEqual([{ ApiKeyAuth: ['processes:read'] }]);
    expect(list.responses['200'].content['application/json'].schema.required).toEqual(['success', 'data', 'meta']);
    expect(list.responses['200'].content['application/json'].schema.properties.data.items).toEqual({ $ref: '#/components/schemas/ProcessResponse' });
    expect((doc.components.schemas as any).ProcessResponse.required).toEqual(expect.arrayContaining(['id', 'release_id', 'input_schema', 'required_assets']));
    expect(list['x-rate-limit'].limit).toBe(60);

    const machines = doc.paths['/api/v1/machines/list']!.get as Operation;
    const status = machines.parameters.find((p: any) => p.name === 'status');
    expect(status.schema).toMatchObject({ type: 'string', enum: ['online', 'offline', 'busy'] });

    const asset = doc.paths['/api/v1/assets/by-name/{name}']!.get as Operation;
    expect(asset.parameters.find((p: any) => p.name === 'name')).toMatchObject({ in: 'path', required: true });
    expect(asset.parameters.find((p: any) => p.name === 'environment').schema.enum).toEqual(['dev', 'staging', 'production']);
    expect(asset['x-rate-limit'].limit).toBe(30);
    expect(Object.keys(asset.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '404', '422', '429']));
  });

  it('documents real responses exactly: a page of processes, a 401 and a 422 match their schemas', async () => {
    const tenant = await seedTenant(t.sql);
    await seedProcess(t.sql, tenant.id);
    const { key } = await seedApiKey(t.sql, tenant.id);
    const okRes = await t.http.get('/api/v1/processes/list').set('X-API-Key', key);
    expect(okRes.status).toBe(200);
    expect(okRes.body.data.length).toBeGreaterThan(0);
    const okSchema = schemaValidator(doc, ['paths', '/api/v1/processes/list', 'get', 'responses', '200', 'content', 'application/json', 'schema']);
    expect(okSchema(okRes.body) ? null : okSchema.errors).toBeNull();

    const unauth = await t.http.get('/api/v1/processes/list');
    expect(unauth.status).toBe(401);
    const errSchema = schemaValidator(doc, ['components', 'schemas', 'ErrorResponse']);
    expect(errSchema(unauth.body) ? null : errSchema.errors).toBeNull();

    const invalid = await t.http.get('/api/v1/processes/list?limit=0').set('X-API-Key', key);
    expect(invalid.status).toBe(422);
    const valSchema = schemaValidator(doc, ['components', 'schemas', 'ValidationErrorResponse']);
    expect(valSchema(invalid.body) ? null : valSchema.errors).toBeNull();
    // and a wrong body does not match: the schema is not vacuous
    expect(okSchema({ success: true, data: [{ id: 'not-a-uuid' }] })).toBe(false);
  });

  it('builds the document once per app router and serves the cached copy', async () => {
    const router = apiRouterOf(t.app);
    expect(openApiDocumentFor(router)).toBe(openApiDocumentFor(router));
    const again = await t.http.get('/api/v1/openapi.json');
    expect(again.body).toEqual(doc);
  });

  it('keeps docs/endpoints.md and the README table in step with the routes (regenerate: node scripts/endpoint-table.mjs)', () => {
    const current = readFileSync(path.join(ROOT, 'docs', 'endpoints.md'), 'utf8');
    expect(current).toBe(renderEndpointsMarkdown(doc));
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme).toBe(spliceReadmeTable(readme, renderEndpointTable(doc)));
  });

  it('answers the 121st request of a minute from one address with 429 and Retry-After', async () => {
    const fresh = await createApiTestContext();
    try {
      for (let i = 0; i < 120; i++) expect((await fresh.http.get('/api/v1/openapi.json')).status).toBe(200);
      const res = await fresh.http.get('/api/v1/openapi.json');
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await fresh.close();
    }
  });
});

describe('TypeBox → OpenAPI 3.1 schema conversion', () => {
  it('drops TypeBox symbol keys and collapses nullable unions into type arrays', () => {
    const schema = Type.Object({ id: Uuid(), note: Nullable(Type.String({ maxLength: 5 })), kind: Nullable(Type.Union([Type.Literal('a'), Type.Literal('b')])) });
    const out = new SchemaRegistry().convert(schema);
    expect(Object.getOwnPropertySymbols(out)).toEqual([]);
    expect(out).toEqual({
      type: 'object',
      required: ['id', 'note', 'kind'],
      properties: {
        id: { type: 'string', format: 'uuid' },
        note: { type: ['string', 'null'], maxLength: 5 },
        // null would not match an enum-like union, so it stays a union
        kind: { anyOf: [{ anyOf: [{ const: 'a', type: 'string' }, { const: 'b', type: 'string' }] }, { type: 'null' }] },
      },
    });
  });

  it('hoists schemas with an $id into components and refers to them', () => {
    const reg = new SchemaRegistry();
    const Thing = Type.Object({ n: Type.Integer() }, { $id: 'Thing' });
    const out = reg.convert(Type.Object({ a: Thing, b: Type.Array(Thing) }));
    expect(out.properties).toEqual({ a: { $ref: '#/components/schemas/Thing' }, b: { type: 'array', items: { $ref: '#/components/schemas/Thing' } } });
    expect(reg.components.Thing).toEqual({ type: 'object', required: ['n'], properties: { n: { type: 'integer' } } });
  });

  it('names a schema by a type-like title; a different schema under a taken name stays inline', () => {
    const reg = new SchemaRegistry({ ErrorResponse: { type: 'object' } });
    const A = Type.Object({ a: Type.String() }, { title: 'Widget' });
    const sameA = Type.Object({ a: Type.String() }, { title: 'Widget' });
    const B = Type.Object({ b: Type.String() }, { title: 'Widget' });
    expect(reg.convert(A)).toEqual({ $ref: '#/components/schemas/Widget' });
    expect(reg.convert(sameA)).toEqual({ $ref: '#/components/schemas/Widget' });
    expect(reg.convert(B)).toMatchObject({ title: 'Widget', properties: { b: { type: 'string' } } });
    expect(reg.convert(Type.Object({}, { title: 'ErrorResponse' }))).toMatchObject({ type: 'object', title: 'ErrorResponse' });
    expect(reg.convert(Type.Object({}, { title: 'not a type name' }))).toMatchObject({ title: 'not a type name' });
    expect(Object.keys(reg.components).sort()).toEqual(['ErrorResponse', 'Widget']);
  });

  it('still lists a route mounted without addRoute, flagged as undeclared', () => {
    const doc = buildOpenApiDocument([{ method: 'get', path: '/api/v1/raw' }]);
    expect((doc.paths['/api/v1/raw']!.get as Operation)['x-undeclared']).toBe(true);
  });
});
