/**
 * Typed domain errors. Core code throws these; the API's error middleware is the one place
 * that turns them into the contract's envelope (docs/architecture.md, invariant 5).
 */
import { es } from './messages/server-messages';

export type ErrorCode =
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'VALIDATION_ERROR'
  | 'RATE_LIMIT_EXCEEDED'
  | 'QUOTA_EXCEEDED'
  | 'NO_MACHINE_AVAILABLE'
  | 'HTTP_ERROR'
  | 'INTERNAL_ERROR';

/** One problem with one field: `field` is the path joined with ` → ` (the error envelope, docs/architecture.md invariant 5). */
export interface FieldIssue {
  field: string;
  message: string;
  /** Path elements, for the `detail[].loc` form the contract also shows. */
  loc: Array<string | number>;
  /** Machine-readable kind of the problem (ajv keyword or our own). */
  type: string;
}

/** The default `message` of each code: the catalogue's (messages/server-messages.ts). */
export const DEFAULT_MESSAGES: Record<ErrorCode, string> = es.errors;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: unknown;
  /** Extra response headers (Retry-After, Allow, …). */
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    status: number,
    message?: string,
    options: { details?: unknown; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message ?? DEFAULT_MESSAGES[code], { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.details = options.details;
    this.headers = options.headers;
  }
}

export class UnauthorizedError extends AppError {
  constructor(message?: string) {
    super('UNAUTHORIZED', 401, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message?: string, details?: unknown) {
    super('FORBIDDEN', 403, message, { details });
  }
}

export class NotFoundError extends AppError {
  constructor(message?: string) {
    super('NOT_FOUND', 404, message);
  }
}

export class ConflictError extends AppError {
  constructor(message?: string, details?: unknown) {
    super('CONFLICT', 409, message, { details });
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message?: string) {
    super('PAYLOAD_TOO_LARGE', 413, message);
  }
}

export class ValidationError extends AppError {
  readonly issues: FieldIssue[];
  constructor(issues: FieldIssue[], message?: string) {
    super('VALIDATION_ERROR', 422, message, {
      details: issues.map(({ field, message: m }) => ({ field, message: m })),
    });
    this.issues = issues;
  }

  /** A validation error about a single field, e.g. `ValidationError.single(['body','name'], '…')`. */
  static single(loc: Array<string | number>, message: string, type = 'value_error', topMessage?: string): ValidationError {
    return new ValidationError([{ field: loc.join(' → '), message, loc, type }], topMessage);
  }
}

export class RateLimitError extends AppError {
  constructor(retryAfterSeconds: number, headers: Record<string, string> = {}, message?: string, details?: unknown) {
    super('RATE_LIMIT_EXCEEDED', 429, message, {
      details,
      headers: { ...headers, 'Retry-After': String(retryAfterSeconds) },
    });
  }
}

/** The monthly execution quota is used up. 429: the request may succeed once the period rolls over. */
export class QuotaExceededError extends AppError {
  constructor(details?: unknown) {
    super('QUOTA_EXCEEDED', 429, undefined, { details });
  }
}

/** Auto-selection found no online, active machine with a free slot in the tenant. */
export class NoMachineAvailableError extends AppError {
  constructor() {
    super('NO_MACHINE_AVAILABLE', 409);
  }
}

export class HttpError extends AppError {
  constructor(status: number, message?: string, headers?: Record<string, string>) {
    super('HTTP_ERROR', status, message, { headers });
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

export function assertNever(value: never): never {
  throw new Error(`Unexpected value: ${String(value)}`);
}
