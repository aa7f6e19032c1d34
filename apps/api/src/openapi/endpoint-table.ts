import type { OpenApiDocument } from './document';

/**
 * The README's endpoint table, rendered from the OpenAPI document (itself built from the route
 * declarations), so it cannot drift from what the app serves. `scripts/endpoint-table.mjs`
 * writes it to docs/endpoints.md; a test fails when that file is stale.
 */
type Op = {
  summary?: string;
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, unknown>;
  'x-rate-limit'?: { limit: number };
  'x-plan-feature'?: string;
};

const METHOD_ORDER = ['get', 'post', 'put', 'patch', 'delete'];

function auth(op: Op): string {
  const req = op.security?.[0];
  if (!req) return 'none';
  if ('ApiKeyAuth' in req) {
    const scope = req.ApiKeyAuth![0];
    const parts = [scope ? `X-API-Key \`${scope}\`` : 'X-API-Key (any valid key)'];
    if (op['x-plan-feature']) parts.push(`plan \`${op['x-plan-feature']}\``);
    return parts.join(', ');
  }
  if ('BearerAuth' in req) return req.BearerAuth!.includes('admin') ? 'Bearer (admin)' : 'Bearer';
  return Object.keys(req).join(', ');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderEndpointTable(doc: OpenApiDocument): string {
  const rows: string[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const methods = Object.keys(item).sort((a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b));
    for (const method of methods) {
      const op = item[method] as Op;
      const statuses = Object.keys(op.responses ?? {});
      const success = statuses.filter((s) => s.startsWith('2'));
      const errors = statuses.filter((s) => !s.startsWith('2'));
      rows.push(
        `| ${method.toUpperCase()} | \`${path}\` | ${cell(op.summary ?? '')} | ${auth(op)} | ${op['x-rate-limit']?.limit ?? '—'} | ${success.join(', ')} | ${errors.join(', ')} |`,
      );
    }
  }
  return [
    '| Method | Path | What it does | Auth / scope | Limit (req/min) | Success | Errors |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** The whole docs/endpoints.md file. */
export function renderEndpointsMarkdown(doc: OpenApiDocument): string {
  return [
    '# Endpoints',
    '',
    '<!-- Generated from the route declarations by `node scripts/endpoint-table.mjs`; do not edit by hand. -->',
    '',
    'Every route of `/api/v1`, as declared with `addRoute` (the same declarations validate requests and build',
    '`GET /api/v1/openapi.json`). Rate limits are per API key (SHA-256 of `X-API-Key`), per access token for',
    'Bearer routes, per source IP otherwise, in one-minute windows shared by every replica. Error bodies use the',
    'envelope `{success: false, error: {code, message, details?, request_id}}`; 422 also carries `detail: [{loc, msg, type}]`.',
    '',
    renderEndpointTable(doc),
    '',
  ].join('\n');
}
