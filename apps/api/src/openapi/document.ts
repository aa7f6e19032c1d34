import type { TObject, TSchema } from '@sinclair/typebox';
import { DEFAULT_RATE_LIMIT, RATE_LIMIT_WINDOW_SECONDS, rateLimitFor } from '@svc/core';
import type { RouteSpec } from '../http/route';
import { SchemaRegistry, type JsonSchema } from './json-schema';
import { COMPONENT_SCHEMAS, ERROR_DESCRIPTIONS, HEADERS, SECURITY_SCHEMES } from './components';

export const API_PREFIX = '/api/v1';

/** One route as the router holds it: method and full path (Koa syntax, e.g. `/api/v1/jobs/:job_id`). */
export interface MountedRoute {
  method: string;
  path: string;
}

/** A mounted route with the declaration `addRoute` recorded for it (absent if it bypassed addRoute). */
export interface DescribedRoute extends MountedRoute {
  spec?: RouteSpec;
}

/**
 * Routes whose success body is the raw value, not the `{success, data}` wrapper.
 * (The OpenAPI document itself is served as a plain document, as every tool expects.)
 */
export const RAW_RESPONSE_ROUTES = new Set(['get /openapi.json']);

export type OpenApiDocument = {
  openapi: '3.1.0';
  info: Record<string, unknown>;
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, unknown>;
  [k: string]: unknown;
};

/** `/api/v1/queues/by-name/:name/items` → `/api/v1/queues/by-name/{name}/items`. */
export function toOpenApiPath(koaPath: string): string {
  return koaPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** The rate limit a route runs with: the same rule as `addRoute` (spec, else the contract's table, else 120). */
export function routeRateLimit(spec: Pick<RouteSpec, 'method' | 'path' | 'rateLimit'>): number {
  return spec.rateLimit ?? rateLimitFor(`${spec.method.toUpperCase()} ${spec.path}`) ?? DEFAULT_RATE_LIMIT;
}

/**
 * Every status a route can answer besides success: implied by its auth kind (401/403/429), by
 * what it reads (413/415/422 for a body, 422 for params/query, 404 for a resource in the path),
 * declared in `spec.errors`, and 500 always. Sorted.
 */
export function routeErrorStatuses(spec: RouteSpec): number[] {
  const s = new Set<number>(spec.errors ?? []);
  switch (spec.auth.kind) {
    case 'api_key':
      s.add(401).add(403).add(429);
      break;
    case 'user':
      s.add(401).add(429);
      // 403 for a non-admin on admin routes, and for a user who must still replace a one-time password
      if (spec.auth.admin || !spec.auth.pendingPassword) s.add(403);
      break;
    case 'none':
      s.add(429);
      break;
  }
  if (spec.body) s.add(413).add(415).add(422);
  if (spec.query && Object.keys(spec.query.properties ?? {}).length > 0) s.add(422);
  if (spec.params && Object.keys(spec.params.properties ?? {}).length > 0) s.add(404).add(422);
  s.add(500);
  return [...s].sort((a, b) => a - b);
}

/** The name of a route mounted without a declaration (flagged as undeclared): from its method and path. */
function operationId(method: string, path: string): string {
  const words = path
    .replace(/^\//, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1));
  return method.toLowerCase() + words.join('');
}

function objectParameters(reg: SchemaRegistry, schema: TObject | undefined, where: 'path' | 'query'): JsonSchema[] {
  if (!schema) return [];
  const converted = reg.convert(schema);
  const props = (converted.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((converted.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    const param: JsonSchema = {
      name,
      in: where,
      // a parameter with a default is optional for the client even if the schema lists it
      required: where === 'path' ? true : required.has(name) && !('default' in rest),
      schema: rest,
    };
    if (typeof description === 'string') param.description = description;
    return param;
  });
}

function successSchema(reg: SchemaRegistry, spec: RouteSpec, key: string): JsonSchema {
  const data: JsonSchema = spec.response ? reg.convert(spec.response) : {};
  if (RAW_RESPONSE_ROUTES.has(key)) return data;
  if (spec.paged) {
    return {
      type: 'object',
      required: ['success', 'data', 'meta'],
      properties: {
        success: { const: true },
        data: { type: 'array', items: data },
        meta: { $ref: spec.paged === 'cursor' ? '#/components/schemas/CursorMeta' : '#/components/schemas/PageMeta' },
      },
    };
  }
  return { type: 'object', required: ['success', 'data'], properties: { success: { const: true }, data } };
}

const DOWNLOAD_HEADERS = {
  'Content-Disposition': { description: '`attachment` with a file name', schema: { type: 'string' } },
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
};

/** A download's two formats: NDJSON (each line one record) and CSV (a header, then one row per record). */
function downloadContent(reg: SchemaRegistry, record: TSchema): JsonSchema {
  return {
    'application/x-ndjson': { schema: { type: 'string', description: 'One JSON record per line, each of this schema', 'x-record': reg.convert(record) } },
    'text/csv': { schema: { type: 'string', description: 'A header line of the record\'s field names, then one row per record; objects as JSON text' } },
  };
}

function security(spec: RouteSpec): Array<Record<string, string[]>> {
  switch (spec.auth.kind) {
    case 'api_key':
      // OpenAPI 3.1 lets a non-OAuth requirement list the roles it needs: here, the scope
      return [{ ApiKeyAuth: spec.auth.scope ? [spec.auth.scope] : [] }];
    case 'user':
      return [{ BearerAuth: spec.auth.admin ? ['admin'] : [] }];
    case 'none':
      return [];
  }
}

function authSentence(spec: RouteSpec): string {
  switch (spec.auth.kind) {
    case 'api_key': {
      const parts = ['Header `X-API-Key`'];
      parts.push(spec.auth.scope ? `scope \`${spec.auth.scope}\` (an unrestricted key is accepted too)` : 'any valid key, no scope');
      if (spec.auth.feature) parts.push(`plan feature \`${spec.auth.feature}\``);
      return parts.join('; ');
    }
    case 'user':
      return spec.auth.admin ? '`Authorization: Bearer <access token>` of a workspace admin' : '`Authorization: Bearer <access token>`';
    case 'none':
      return 'No authentication';
  }
}

function rateLimitSentence(spec: RouteSpec): string {
  const unit = spec.auth.kind === 'api_key' ? 'per API key' : spec.auth.kind === 'user' ? 'per access token' : 'per source IP';
  return `${routeRateLimit(spec)} requests per minute ${unit}`;
}

function errorResponse(status: number): JsonSchema {
  const ref = status === 422 ? 'ValidationErrorResponse' : 'ErrorResponse';
  const response: JsonSchema = {
    description: ERROR_DESCRIPTIONS[status] ?? 'Error',
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
    headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
  };
  if (status === 429) {
    response.headers = {
      'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
      'Retry-After': { $ref: '#/components/headers/Retry-After' },
      'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
      'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
      'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
    };
  }
  return response;
}

function operation(reg: SchemaRegistry, route: DescribedRoute): JsonSchema {
  const spec = route.spec;
  const method = route.method.toLowerCase();
  if (!spec) {
    // mounted without addRoute: still listed (the document never hides a route), flagged so a test catches it
    return {
      operationId: operationId(method, route.path),
      summary: 'Undeclared route',
      'x-undeclared': true,
      responses: { default: errorResponse(500) },
    };
  }
  const key = `${spec.method} ${spec.path}`;
  const parameters = [
    ...objectParameters(reg, spec.params, 'path'),
    ...objectParameters(reg, spec.query, 'query'),
    ...(spec.headers ?? []).map((h) => ({ name: h.name, in: 'header', required: h.required ?? false, description: h.description, schema: { type: 'string' } })),
  ];
  const successStatus = String(spec.successStatus ?? 200);
  const responses: Record<string, unknown> = {
    [successStatus]: {
      description: spec.paged ? 'A page of results' : 'Success',
      headers: {
        'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
        'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
        'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
        'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
      },
      content: spec.download ? downloadContent(reg, spec.download.record) : { 'application/json': { schema: successSchema(reg, spec, key) } },
      ...(spec.download ? { headers: { ...DOWNLOAD_HEADERS, 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } } } : {}),
    },
  };
  for (const status of routeErrorStatuses(spec)) responses[String(status)] = errorResponse(status);

  const op: JsonSchema = {
    operationId: spec.operationId,
    summary: spec.summary,
    description: [spec.description, `**Auth:** ${authSentence(spec)}.`, `**Rate limit:** ${rateLimitSentence(spec)}.`]
      .filter(Boolean)
      .join('\n\n'),
    tags: spec.tags,
    security: security(spec),
    responses,
    'x-rate-limit': { limit: routeRateLimit(spec), window_seconds: RATE_LIMIT_WINDOW_SECONDS },
  };
  if (spec.auth.kind === 'api_key' && spec.auth.scope) op['x-scope'] = spec.auth.scope;
  if (spec.auth.kind === 'api_key' && spec.auth.feature) op['x-plan-feature'] = spec.auth.feature;
  if (parameters.length > 0) op.parameters = parameters;
  if (spec.body) {
    op.requestBody = { required: true, content: { 'application/json': { schema: reg.convert(spec.body) } } };
  }
  return op;
}

/**
 * The OpenAPI 3.1 document of `routes` (what the router serves), each described by the very
 * TypeBox schemas `addRoute` validates with. Paths are sorted, so the output is stable.
 */
export function buildOpenApiDocument(routes: DescribedRoute[], info: { version?: string } = {}): OpenApiDocument {
  const reg = new SchemaRegistry(COMPONENT_SCHEMAS);
  const paths: Record<string, Record<string, unknown>> = {};
  const tags: string[] = [];
  const sorted = [...routes].sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
  for (const route of sorted) {
    const path = toOpenApiPath(route.path);
    (paths[path] ??= {})[route.method.toLowerCase()] = operation(reg, route);
    for (const t of route.spec?.tags ?? []) if (!tags.includes(t)) tags.push(t);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Automation Service API',
      version: info.version ?? '1.0.0',
      description:
        'Public API (header `X-API-Key`) and management API (`Authorization: Bearer <access token>`) of the automation ' +
        'platform. Success bodies are `{success: true, data}` (paged lists add `meta`); errors are ' +
        '`{success: false, error: {code, message, details?, request_id}}`. Every response carries `X-Request-Id`; ' +
        'rate-limited routes answer `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`, and 429 adds `Retry-After`.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      schemas: reg.components,
      headers: HEADERS,
      securitySchemes: SECURITY_SCHEMES,
    },
  };
}

/** Pairs each mounted route with its declaration; HEAD (added by the router for GET) is not a route of its own. */
export function describeRoutes(mounted: MountedRoute[], catalog: ReadonlyMap<string, RouteSpec>): DescribedRoute[] {
  const seen = new Set<string>();
  const out: DescribedRoute[] = [];
  for (const r of mounted) {
    const method = r.method.toLowerCase();
    if (method === 'head' || method === 'options') continue;
    const id = `${method} ${r.path}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const rel = r.path.startsWith(API_PREFIX) ? r.path.slice(API_PREFIX.length) : r.path;
    out.push({ method, path: r.path, spec: catalog.get(`${method} ${rel}`) });
  }
  return out;
}

/** The (method, path) pairs a @koa/router instance serves, from its layer stack. */
export function mountedRoutes(router: { stack: Array<{ path: string | RegExp; methods: string[] }> }): MountedRoute[] {
  const out: MountedRoute[] = [];
  for (const layer of router.stack) {
    if (typeof layer.path !== 'string') continue;
    for (const method of layer.methods) out.push({ method: method.toLowerCase(), path: layer.path });
  }
  return out;
}
