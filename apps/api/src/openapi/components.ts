import { DEFAULT_MESSAGES, es, MAX_JSON_DEPTH, type ErrorCode } from '@svc/core';
import type { JsonSchema } from './json-schema';

/** Every code the error middleware can put in `error.code` (the public codes plus our two domain codes). */
const ERROR_CODES = Object.keys(DEFAULT_MESSAGES) as ErrorCode[];

const ErrorBody: JsonSchema = {
  type: 'object',
  required: ['code', 'message'],
  properties: {
    code: { type: 'string', enum: ERROR_CODES, description: 'Stable machine-readable code' },
    message: { type: 'string', description: 'Human-readable text in Spanish' },
    details: {
      description: 'Extra information, only when there is some; for validation failures a list of `{field, message}`',
      anyOf: [{ type: 'object' }, { type: 'array' }],
    },
    request_id: { type: 'string', description: 'Identifier of the request (also in the `X-Request-Id` header)' },
  },
};

/** The one error envelope (the error envelope, docs/architecture.md invariant 5), and the 422 form that also carries `detail`. */
export const COMPONENT_SCHEMAS: Record<string, JsonSchema> = {
  ErrorResponse: {
    type: 'object',
    required: ['success', 'error'],
    properties: { success: { const: false }, error: ErrorBody },
  },
  FieldError: {
    type: 'object',
    required: ['field', 'message'],
    properties: {
      field: { type: 'string', description: 'Field path, elements joined with ` → ` (e.g. `body → items → 0`)' },
      message: { type: 'string' },
    },
  },
  ValidationDetail: {
    type: 'object',
    required: ['loc', 'msg', 'type'],
    properties: {
      loc: { type: 'array', items: { type: ['string', 'integer'] }, description: 'Path elements, starting with body, query or path' },
      msg: { type: 'string' },
      type: { type: 'string', description: 'Kind of problem (JSON Schema keyword or our own)' },
    },
  },
  ValidationErrorResponse: {
    type: 'object',
    required: ['success', 'error', 'detail'],
    properties: {
      success: { const: false },
      error: {
        type: 'object',
        required: ['code', 'message', 'details'],
        properties: {
          code: { const: 'VALIDATION_ERROR' },
          message: { type: 'string' },
          details: { type: 'array', items: { $ref: '#/components/schemas/FieldError' } },
          request_id: { type: 'string' },
        },
      },
      detail: { type: 'array', items: { $ref: '#/components/schemas/ValidationDetail' } },
    },
  },
  PageMeta: {
    type: 'object',
    required: ['page', 'limit', 'total', 'pages'],
    properties: {
      page: { type: 'integer', minimum: 1 },
      limit: { type: 'integer', minimum: 1 },
      total: { type: 'integer', minimum: 0 },
      pages: { type: 'integer', minimum: 0 },
    },
  },
  CursorMeta: {
    type: 'object',
    required: ['limit', 'next_cursor'],
    description: 'Keyset paging: send `next_cursor` as `cursor` for the next (older) page; null on the last page.',
    properties: {
      limit: { type: 'integer', minimum: 1 },
      next_cursor: { type: ['string', 'null'] },
    },
  },
};

export const ERROR_DESCRIPTIONS: Record<number, string> = {
  401: `UNAUTHORIZED — credential missing or invalid (key absent, wrong, revoked, expired: \`${es.auth.apiKeyExpired}\`; token expired). Default message \`${DEFAULT_MESSAGES.UNAUTHORIZED}\`.`,
  403: `FORBIDDEN — authenticated but not permitted: missing scope, IP not allowed (\`${es.auth.ipNotAllowed}\`), feature not in plan, inactive subscription, non-admin user, a user who must still replace a one-time password (\`${es.users.mustChangePassword}\`). Default message \`${DEFAULT_MESSAGES.FORBIDDEN}\`.`,
  404: `NOT_FOUND — resource missing or not in the caller's workspace. Default message \`${DEFAULT_MESSAGES.NOT_FOUND}\`.`,
  409: `CONFLICT — the resource exists or its state conflicts with the request. Default message \`${DEFAULT_MESSAGES.CONFLICT}\`.`,
  413: 'PAYLOAD_TOO_LARGE — body above 2 MiB (compressed bodies counted after inflating), refused once the caller is authenticated, before any handler runs.',
  415: 'HTTP_ERROR — the body is not JSON (`Content-Type: application/json` expected).',
  422: `VALIDATION_ERROR — invalid path, query or body, including malformed JSON, U+0000 or an unpaired UTF-16 surrogate in any string or field name, and nesting deeper than ${MAX_JSON_DEPTH} levels. \`error.details\` is \`[{field, message}]\`; \`detail\` is \`[{loc, msg, type}]\`. Default message \`${DEFAULT_MESSAGES.VALIDATION_ERROR}\`.`,
  429: `RATE_LIMIT_EXCEEDED — too many requests in the one-minute window (\`Retry-After\` says when to retry). Default message \`${DEFAULT_MESSAGES.RATE_LIMIT_EXCEEDED}\`; trigger routes also use QUOTA_EXCEEDED for an exhausted monthly quota.`,
  500: 'INTERNAL_ERROR — unhandled error; only a generic message reaches the client.',
};

export const HEADERS: Record<string, JsonSchema> = {
  'X-Request-Id': {
    description: 'Identifier of the request: the incoming `X-Request-Id` when sane, else a new UUID',
    schema: { type: 'string' },
  },
  'X-RateLimit-Limit': { description: 'Requests allowed in the one-minute window', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'When the window resets, in Unix seconds', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
};

export const SECURITY_SCHEMES: Record<string, JsonSchema> = {
  ApiKeyAuth: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description:
      'Public API key (`svc_ak_…`). The requirement lists the scope the route needs (fail-closed). Evaluation: active and not expired (401), source IP in allowed_ips (403), scope (403).',
  },
  BearerAuth: {
    type: 'http',
    scheme: 'bearer',
    description: 'User access token (`Authorization: Bearer <token>`). Requirements listing `admin` need the workspace admin role (403 otherwise). Until a user replaces a one-time password, only `GET /auth/me`, `POST /auth/logout` and `POST /auth/password` answer; every other route is 403.',
  },
};
