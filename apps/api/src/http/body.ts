import type { Context } from 'koa';
import coBody from 'co-body';
import { es, HttpError, PayloadTooLargeError, ValidationError, jsonInputIssue, jsonTextMayHoldUnstorable } from '@svc/core';

/** Ordinary JSON endpoints accept bodies up to 2 MiB. */
export const BODY_LIMIT_BYTES = 2 * 1024 * 1024;

const malformed = () => ValidationError.single(['body'], es.http.malformedJson, 'json_invalid', es.http.bodyNotJson);

// what JSON.parse accepts at the top but a request body may not be: only objects and arrays
const OBJECT_OR_ARRAY = /^[\x20\x09\x0a\x0d]*[[{]/;

/**
 * The text of a route's body, read; parsed and checked on first use, so that what is wrong
 * with it (422) is answered when the handler asks for it — after the handler's 404 — and a
 * body nobody asks for is never parsed.
 */
export class RequestBody {
  private text: string | undefined;
  private outcome: { value: unknown } | { error: ValidationError } | undefined;

  constructor(text: string, private readonly unreadable?: ValidationError) {
    this.text = text;
  }

  /**
   * The body as JSON: an empty body is `{}`; text that is not a JSON object or array, or that
   * holds what a request may not carry (core's jsonInputIssue: text Postgres cannot store,
   * nesting deeper than MAX_JSON_DEPTH, `__proto__` keys), is a 422 naming the field.
   */
  value(): unknown {
    const outcome = (this.outcome ??= this.parse());
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  /** The value when `value()` would return one, else undefined: for reading before the 404 checks. */
  peek(): unknown {
    const outcome = (this.outcome ??= this.parse());
    return 'value' in outcome ? outcome.value : undefined;
  }

  private parse(): { value: unknown } | { error: ValidationError } {
    const text = this.text!;
    this.text = undefined; // up to 2 MiB: not kept once parsed
    if (this.unreadable) return { error: this.unreadable };
    if (text === '') return { value: {} };
    if (!OBJECT_OR_ARRAY.test(text)) return { error: malformed() };
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { error: malformed() };
    }
    const issue = jsonInputIssue(value, ['body'], { strings: jsonTextMayHoldUnstorable(text) });
    return issue ? { error: new ValidationError([issue]) } : { value };
  }
}

/**
 * Reads the body of a route that declares one, once its guards have passed (a caller without a
 * credential never gets a body read, let alone parsed): 415 unless it is JSON, 413 over
 * BODY_LIMIT_BYTES — from Content-Length before reading, else as counted while reading
 * (chunked or compressed bodies, counted after decompression). A body that cannot be decoded
 * (a corrupt compressed stream) is malformed: a 422 when the handler asks for it.
 */
export async function readRequestBody(ctx: Context): Promise<RequestBody> {
  const length = ctx.request.length;
  if (length === undefined ? ctx.req.headers['transfer-encoding'] === undefined : length === 0) return new RequestBody('');
  if (!ctx.is('application/json', 'application/*+json')) {
    throw new HttpError(415, es.http.contentTypeNotJson);
  }
  if (length !== undefined && length > BODY_LIMIT_BYTES) throw new PayloadTooLargeError();
  try {
    return new RequestBody(await coBody.text(ctx.req, { limit: BODY_LIMIT_BYTES, encoding: 'utf8' }));
  } catch (raw) {
    const err = raw as { type?: string; status?: number };
    if (err.type === 'entity.too.large') throw new PayloadTooLargeError();
    if (err.status === 415 || err.type === 'encoding.unsupported') throw new HttpError(415, es.http.encodingUnsupported);
    if (err.type === 'request.aborted') throw new HttpError(400, es.http.requestAborted);
    return new RequestBody('', ValidationError.single(['body'], es.http.bodyUndecodable, 'body_undecodable', es.http.bodyNotJson));
  }
}
