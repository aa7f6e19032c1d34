import type { ValidateFunction } from 'ajv';
import { ValidationError, type FieldIssue } from '../errors';
import { ajvErrorsToIssues, compileUserSchema } from '../validation/validate';

/** The webhook trigger's fifth check (docs/decisions/jobs.md): input_data against the process's input_schema. */
export const INPUT_DATA_REQUIRED_MESSAGE = 'El proceso requiere input_data según su schema';
export const INPUT_DATA_INVALID_PREFIX = 'input_data no cumple el schema del proceso:';

/**
 * Throws 422 when the process has an input_schema and input_data is missing (absent or null) or
 * violates it. The message names every violation as `path: problem`, paths under `input_data`.
 */
export function checkInputAgainstSchema(inputSchema: object | null, inputData: unknown): void {
  if (inputSchema === null) return;
  if (inputData === undefined || inputData === null) {
    throw ValidationError.single(['body', 'input_data'], INPUT_DATA_REQUIRED_MESSAGE, 'missing', INPUT_DATA_REQUIRED_MESSAGE);
  }
  let fn: ValidateFunction;
  try {
    fn = compileUserSchema(inputSchema);
  } catch {
    // saved schemas are checked when saved; one that still fails to compile is the process's fault
    throw ValidationError.single(['body', 'input_data'], 'el input_schema del proceso no es válido', 'schema',
      `${INPUT_DATA_INVALID_PREFIX} el input_schema del proceso no es válido`);
  }
  if (fn(inputData)) return;
  const issues: FieldIssue[] = ajvErrorsToIssues(fn.errors ?? [], 'body').map((i) => {
    const loc = ['body', 'input_data', ...i.loc.slice(1)];
    return { ...i, loc, field: loc.join(' → ') };
  });
  const described = issues.map((i) => `${i.loc.slice(1).join(' → ')}: ${i.message}`).join('; ');
  throw new ValidationError(issues, `${INPUT_DATA_INVALID_PREFIX} ${described}`);
}
