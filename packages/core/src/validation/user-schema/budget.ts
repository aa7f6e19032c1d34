import { _, type CodeKeywordDefinition, type ErrorObject, type KeywordCxt } from 'ajv';
import names from 'ajv/dist/compile/names';

/**
 * Size limits bound what one step of validation costs, not how many steps a schema makes: a few
 * `$ref`s that each use the next one twice, or a wide `allOf` over a large array, multiply. So
 * every subschema of an admin-supplied schema carries GUARD_KEYWORD (added to the compiled copy,
 * never stored), whose code runs each time the subschema is applied: it stops the validation once
 * it has run for VALIDATION_TIME_LIMIT_MS or gathered MAX_COLLECTED_VIOLATIONS errors. Both end as
 * a 422 for the request that asked; nothing else waits longer than one such step.
 * See docs/decisions/admin-schemas.md.
 */
export const GUARD_KEYWORD = '$svcGuard';
export const VALIDATION_TIME_LIMIT_MS = 250;
export const MAX_COLLECTED_VIOLATIONS = 100;

export class ValidationBudgetExceeded extends Error {
  constructor(
    readonly reason: 'time' | 'violations',
    /** The first violations found, when there were too many. */
    readonly errors: ErrorObject[] = [],
  ) {
    super(reason === 'time' ? 'validation time limit reached' : 'too many violations');
  }
}

let deadline = Infinity;

/** Throws once the running validation is out of time; for keywords whose one step is long. */
export function checkDeadline(): void {
  if (performance.now() > deadline) throw new ValidationBudgetExceeded('time');
}

function tick(collected: ErrorObject[] | null): void {
  if (collected !== null && collected.length > MAX_COLLECTED_VIOLATIONS) {
    throw new ValidationBudgetExceeded('violations', collected.slice(0, MAX_COLLECTED_VIOLATIONS));
  }
  checkDeadline();
}

export const guardKeyword: CodeKeywordDefinition = {
  keyword: GUARD_KEYWORD,
  schemaType: 'boolean',
  code(cxt: KeywordCxt) {
    const fn = cxt.gen.scopeValue('func', { ref: tick });
    cxt.gen.code(_`${fn}(${names.vErrors})`);
  },
};

/**
 * Runs one validation under the budget. Validation is synchronous, so one deadline at a time is
 * enough; the previous one is restored for safety all the same.
 */
export function withinBudget<T>(run: () => T, limitMs = VALIDATION_TIME_LIMIT_MS): T {
  const outer = deadline;
  deadline = performance.now() + limitMs;
  try {
    return run();
  } finally {
    deadline = outer;
  }
}
