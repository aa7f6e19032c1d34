import { isAppError, type AppError } from '@svc/core';

/**
 * Exit codes, stable for scripts:
 *   0 done · 1 failed (database unreachable, unexpected error) · 2 usage or invalid input ·
 *   3 not found · 4 conflict (name or email already taken, ambiguous reference)
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, notFound: 3, conflict: 4 } as const;

/** A mistake in the command line itself (unknown command or flag, missing value). */
export class UsageError extends Error {
  constructor(message: string, readonly help?: string) {
    super(message);
  }
}

/** Where a usage error points for help. */
export function helpHint(command?: string): string {
  return command ? `svc ${command} --help` : 'svc --help';
}

/** A failure the CLI explains in one sentence (e.g. Postgres unreachable). */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT.failed, readonly code = 'FAILED') {
    super(message);
  }
}

export interface ErrorReport {
  exitCode: number;
  code: string;
  message: string;
  details?: Array<{ field: string; message: string }>;
}

/** Field paths of core validation errors name API body fields; the CLI shows its own flag names. */
export type FieldNames = Record<string, string>;

function appErrorReport(err: AppError, fields: FieldNames): ErrorReport {
  const exitCode = err.code === 'VALIDATION_ERROR' ? EXIT.usage
    : err.code === 'NOT_FOUND' ? EXIT.notFound
      : err.code === 'CONFLICT' ? EXIT.conflict
        : EXIT.failed;
  const details = Array.isArray(err.details)
    ? (err.details as Array<{ field: string; message: string }>).map((d) => {
      const path = d.field.replace(/^body( → )?/, '');
      // the whole path when the command names it (a nested field's own flag), else its first segment
      const top = fields[path] !== undefined ? path : path.split(' → ')[0] ?? path;
      return { field: fields[top] ? path.replace(top, fields[top]!) : path || 'input', message: d.message };
    })
    : undefined;
  return { exitCode, code: err.code, message: err.message, ...(details ? { details } : {}) };
}

export function errorReport(err: unknown, fields: FieldNames = {}): ErrorReport {
  if (isAppError(err)) return appErrorReport(err, fields);
  if (err instanceof UsageError) return { exitCode: EXIT.usage, code: 'USAGE', message: err.message };
  if (err instanceof CliError) return { exitCode: err.exitCode, code: err.code, message: err.message };
  return { exitCode: EXIT.failed, code: 'FAILED', message: err instanceof Error ? err.message : String(err) };
}

/** One line: the message, then each field problem. */
export function formatErrorLine(report: ErrorReport): string {
  const details = report.details?.map((d) => `${d.field}: ${d.message}`).join('; ');
  return `svc: ${report.message}${details ? ` (${details})` : ''}`;
}
