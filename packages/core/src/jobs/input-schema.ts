import type { ErrorObject } from 'ajv';
import { ValidationError, type FieldIssue } from '../errors';
import { ajvErrorsToIssues } from '../validation/validate';
import { ValidationBudgetExceeded, VALIDATION_TIME_LIMIT_MS, withinBudget } from '../validation/user-schema/budget';
import { cachedUserSchema } from '../validation/user-schema/compile';
import { es } from '../messages/server-messages';

/** The webhook trigger's fifth check (docs/decisions/jobs.md): input_data against the process's input_schema. */
export const INPUT_DATA_REQUIRED_MESSAGE = es.inputData.required;
export const INPUT_DATA_INVALID_PREFIX = es.inputData.invalidPrefix;

/** A process's input_schema as the trigger reads it: Postgres adds its hash and size. */
export interface StoredInputSchema {
  schema: Record<string, unknown>;
  /** md5 of the stored text: the key of the compiled validator. */
  hash: string;
  bytes: number;
}

const refusal = (message: string, type: string) =>
  ValidationError.single(['body', 'input_data'], message, type, `${INPUT_DATA_INVALID_PREFIX} ${message}`);

function violationsError(errors: ErrorObject[], more: boolean): ValidationError {
  const issues: FieldIssue[] = ajvErrorsToIssues(errors, 'body').map((i) => {
    const loc = ['body', 'input_data', ...i.loc.slice(1)];
    return { ...i, loc, field: loc.join(' → ') };
  });
  const described = issues.map((i) => `${i.loc.slice(1).join(' → ')}: ${i.message}`).join('; ');
  return new ValidationError(issues, `${INPUT_DATA_INVALID_PREFIX} ${described}${more ? es.inputData.andMore : ''}`);
}

/**
 * Throws 422 when the process has an input_schema and input_data is missing (absent or null) or
 * violates it. The message names every violation as `path: problem`, paths under `input_data`
 * (the first MAX_COLLECTED_VIOLATIONS when there are more). A schema that cannot be used (one
 * stored before the limits existed), a validation that runs out of budget, or a validator that
 * throws for any reason all end as a 422 for this request only.
 */
export function checkInputAgainstSchema(stored: StoredInputSchema | null, inputData: unknown): void {
  if (stored === null) return;
  if (inputData === undefined || inputData === null) {
    throw ValidationError.single(['body', 'input_data'], INPUT_DATA_REQUIRED_MESSAGE, 'missing', INPUT_DATA_REQUIRED_MESSAGE);
  }
  const verdict = cachedUserSchema(stored.hash, stored.schema, stored.bytes);
  if (!verdict.ok) throw refusal(es.inputData.schemaUnusable(verdict.problem.message), 'schema');
  let valid: boolean;
  try {
    valid = withinBudget(() => verdict.validate(inputData) as boolean);
  } catch (err) {
    if (err instanceof ValidationBudgetExceeded) {
      if (err.reason === 'violations') throw violationsError(err.errors, true);
      throw refusal(es.inputData.timeLimit(VALIDATION_TIME_LIMIT_MS), 'schema_budget');
    }
    if (err instanceof RangeError) throw refusal(es.inputData.tooDeep, 'schema_budget');
    throw refusal(es.inputData.couldNotValidate, 'schema');
  }
  if (!valid) throw violationsError(verdict.validate.errors ?? [], false);
}
