/**
 * The two kinds of failure of an item or a run (docs/decisions/exception-types.md): an
 * `application` one (a system did not answer, a screen was not found) is retried by the retry
 * policy, a `business` one (the data itself is wrong) is final. Dependency-free like statuses.ts.
 */
export const EXCEPTION_TYPES = ['business', 'application'] as const;
export type ExceptionType = (typeof EXCEPTION_TYPES)[number];
