import { ApiError as ClientError } from '@svc/client';

/**
 * The API's error envelope, read once for every page: `{success:false, error:{code, message,
 * details:[{field, message}], request_id}}`. Pure (no DOM), so jest tests it as it is.
 */

export interface FieldIssue {
  field: string;
  message: string;
}

export interface ErrorEnvelope {
  success: false;
  error: { code: string; message: string; details?: unknown; request_id?: string };
}

/** An answer of the API that was not a success: its status and, when it had one, its envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: FieldIssue[] = [],
    readonly requestId?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The API names a field by its location first (`body → email`); a form knows it as `email`. */
const LOCATIONS = new Set(['body', 'query', 'params']);

export function formFieldOf(field: string): string {
  const parts = field.split('→').map((p) => p.trim()).filter((p) => p.length > 0);
  if (parts.length > 1 && LOCATIONS.has(parts[0]!)) parts.shift();
  return parts.join('.');
}

function isEnvelope(body: unknown): body is ErrorEnvelope {
  if (typeof body !== 'object' || body === null) return false;
  const error = (body as { error?: unknown }).error;
  return typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string';
}

/**
 * Turns an answer into an ApiError. A body that is not the envelope (a proxy's HTML page, a
 * network error) gets the catalogue's generic text, passed in so this module has no texts.
 */
export function toApiError(status: number, body: unknown, fallbackMessage: string): ApiError {
  if (!isEnvelope(body)) return new ApiError(status, status >= 500 ? 'INTERNAL_ERROR' : 'HTTP_ERROR', fallbackMessage);
  const { code, message, details, request_id } = body.error;
  const issues: FieldIssue[] = Array.isArray(details)
    ? details.filter((d): d is FieldIssue => typeof d?.field === 'string' && typeof d?.message === 'string')
    : [];
  return new ApiError(status, code, message, issues, request_id);
}

/**
 * A failed call of the typed client (@svc/client) as the console shows it: an answer of the API
 * through toApiError, from the body the client kept; anything else (no connection, no answer in
 * time) is a network error. The texts are passed in, as above.
 */
export function consoleError(err: unknown, texts: { networkError: string; unexpectedError: string }): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ClientError) return toApiError(err.status, err.body, texts.unexpectedError);
  return new ApiError(0, 'NETWORK_ERROR', texts.networkError);
}

export interface FormErrors {
  /** The first message for each field a form shows, keyed by the form's field name. */
  fields: Record<string, string>;
  /** What no shown field can hold: the envelope's message, or the issues of fields the form lacks. */
  general: string | null;
}

/**
 * Places an error's messages next to the fields a form has; the rest goes to the form's general
 * message, so no message of the API is ever dropped.
 */
export function formErrors(err: unknown, formFields: readonly string[], fallbackMessage: string): FormErrors {
  if (!(err instanceof ApiError)) return { fields: {}, general: fallbackMessage };
  const fields: Record<string, string> = {};
  const elsewhere: string[] = [];
  for (const issue of err.issues) {
    const name = formFieldOf(issue.field);
    if (formFields.includes(name)) {
      fields[name] ??= issue.message;
    } else {
      elsewhere.push(name ? `${name}: ${issue.message}` : issue.message);
    }
  }
  const placed = Object.keys(fields).length > 0;
  const general = elsewhere.length > 0 ? [err.message, ...elsewhere].join(' — ') : placed ? null : err.message;
  return { fields, general };
}
