import { Type } from '@sinclair/typebox';
import type { Queryable, Sql } from '../db/sql';
import { ConflictError, ValidationError } from '../errors';
import { recordAudit } from '../audit/audit';
import type { AuditActor } from '../audit/catalog-changes';
import { recordEffect } from '../outbox/effects';
import { inTransactionPublishingAtOnce, type AtOnceDeps } from '../outbox/at-once';
import { canonicalJson } from '../idempotency/key';
import { sha256Hex } from '../security/hash';
import { jsonInputIssue } from '../validation/json-input';
import { ValidationBudgetExceeded, withinBudget } from '../validation/user-schema/budget';
import { cachedUserSchema, userSchemaProblem } from '../validation/user-schema/compile';
import { getJob } from './service';
import type { JobRow, JobWithNames } from './repo';
import { JOB_STATUS_TRANSITIONS as T, jobStatusInSql, jobStatusSql } from './transitions';
import { es } from '../messages/server-messages';

/**
 * Human input (docs/decisions/human-input.md): a running job asks a person for a value and waits
 * in `waiting_input`; an admin answers and it runs again. The robot's side (ask, read the answer)
 * is fenced by the run's `attempt` like every other write of a run; the person's side is one
 * transaction with its audit row and the `job-input` effect that tells the robot at once.
 */

export const MAX_INPUT_PROMPT_LENGTH = 2000;
export const MAX_INPUT_CHOICES = 100;
/** Bytes of the options as JSON (choices or schema): what a person's answer is checked against. */
export const MAX_INPUT_OPTIONS_BYTES = 65_536;
/** Bytes of an answer as JSON. */
export const MAX_INPUT_VALUE_BYTES = 65_536;

export type InputOptions = { choices: unknown[] } | { schema: Record<string, unknown> };

export interface InputRequest {
  prompt: string;
  options: InputOptions;
}

/** A 422 naming the field, its message also the envelope's (a robot or a person reads it as is). */
const bad = (loc: Array<string | number>, message: string, type = 'value_error') =>
  ValidationError.single(loc, message, type, `${loc.filter((p) => p !== 'body').join(' → ')}: ${message}`);

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? 'null', 'utf8');
}

/**
 * Checks what a robot asks: a printable prompt of 1..MAX_INPUT_PROMPT_LENGTH characters and
 * options that are exactly `{"choices": [1..100 distinct JSON values]}` or `{"schema": <JSON
 * Schema>}`, the schema bounded and compiled like a process's input_schema (linear patterns, a
 * time budget), all of it at most MAX_INPUT_OPTIONS_BYTES. Throws 422 naming the field.
 */
export function checkInputRequest(req: { prompt?: unknown; options?: unknown }): InputRequest {
  const { prompt, options } = req;
  if (typeof prompt !== 'string' || prompt.trim().length === 0) throw bad(['prompt'], es.humanInput.promptEmpty);
  if (prompt.length > MAX_INPUT_PROMPT_LENGTH) throw bad(['prompt'], es.humanInput.atMostCharacters(MAX_INPUT_PROMPT_LENGTH));
  const promptIssue = jsonInputIssue(prompt, ['prompt']);
  if (promptIssue) throw new ValidationError([promptIssue]);
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw bad(['options'], es.humanInput.optionsShape);
  }
  const keys = Object.keys(options);
  if (keys.length !== 1 || (keys[0] !== 'choices' && keys[0] !== 'schema')) {
    throw bad(['options'], es.humanInput.optionsOneKey);
  }
  const issue = jsonInputIssue(options, ['options']);
  if (issue) throw new ValidationError([issue]);
  if (jsonBytes(options) > MAX_INPUT_OPTIONS_BYTES) throw bad(['options'], es.humanInput.moreThanBytes(MAX_INPUT_OPTIONS_BYTES));
  if ('choices' in options) {
    const choices = (options as { choices: unknown }).choices;
    if (!Array.isArray(choices) || choices.length === 0) throw bad(['options', 'choices'], es.humanInput.choicesEmpty);
    if (choices.length > MAX_INPUT_CHOICES) throw bad(['options', 'choices'], es.humanInput.atMostChoices(MAX_INPUT_CHOICES));
    const seen = new Set<string>();
    choices.forEach((c, i) => {
      const key = canonicalJson(c);
      if (seen.has(key)) throw bad(['options', 'choices', i], es.humanInput.repeatedChoice);
      seen.add(key);
    });
    return { prompt, options: { choices } };
  }
  const schema = (options as { schema: unknown }).schema;
  const problem = userSchemaProblem(schema);
  if (problem) throw bad(['options', 'schema', ...problem.path], problem.message, problem.type);
  return { prompt, options: { schema: schema as Record<string, unknown> } };
}

export type AskResult =
  /** the job waits in `waiting_input`; its timeout is paused with this much left */
  | { waiting: true }
  /** a stop was requested before the ask: the robot stops instead */
  | { refused: 'stop_requested' }
  /** this run no longer owns the job (stale attempt, ended by the engine) */
  | { refused: 'not_owned' };

/**
 * The robot asks (`running → waiting_input`, fenced by `attempt`): stores the prompt and the
 * options, forgets any earlier answer and pauses the timeout (the time left is kept, timeout_at
 * cleared, so the timeout sweep passes the job by). Bad options are the robot's error (422).
 */
export async function askJobInput(sql: Queryable, jobId: string, attempt: number, req: { prompt?: unknown; options?: unknown }): Promise<AskResult> {
  const { prompt, options } = checkInputRequest(req);
  const [row] = await sql<Array<{ id: string }>>`
    update jobs
       set status = ${jobStatusSql(sql, T.ask.to)}, pending_input_prompt = ${prompt}, pending_input_options = ${sql.json(options as never)},
           input_answer = null, input_timeout_left = greatest(timeout_at - now(), interval '0'), timeout_at = null,
           updated_at = now()
     where id = ${jobId} and ${jobStatusInSql(sql, 'status', T.ask.from)} and attempt = ${attempt} and not stop_requested
    returning id`;
  if (row) return { waiting: true };
  const [cur] = await sql<Array<{ stop_requested: boolean }>>`
    select stop_requested from jobs where id = ${jobId} and status = 'running' and attempt = ${attempt}`;
  return { refused: cur?.stop_requested ? 'stop_requested' : 'not_owned' };
}

export interface InputState {
  status: JobRow['status'];
  stop_requested: boolean;
  /** the answer, once the job runs again */
  answer: { value: unknown } | null;
  /** when the job times out now (null while it waits) */
  timeout_at: Date | null;
}

/**
 * What a waiting robot polls (and reads once told by pub/sub that it was answered): its job's
 * status and the answer. Null when this run no longer owns the job.
 */
export async function readJobInput(sql: Queryable, jobId: string, attempt: number): Promise<InputState | null> {
  const [row] = await sql<Array<{ status: JobRow['status']; stop_requested: boolean; input_answer: { value: unknown } | null; timeout_at: Date | null }>>`
    select status, stop_requested, input_answer, timeout_at from jobs where id = ${jobId} and attempt = ${attempt}`;
  if (!row) return null;
  return { status: row.status, stop_requested: row.stop_requested, answer: row.input_answer, timeout_at: row.timeout_at };
}

/** The body of POST /settings/jobs/{job_id}/input. */
export const JobInputBody = Type.Object(
  {
    value: Type.Unknown({
      description:
        'The answer, any JSON value (null included): one of `pending_input_options.choices` (compared as JSON), or valid ' +
        `against \`pending_input_options.schema\`; at most ${MAX_INPUT_VALUE_BYTES} bytes.`,
    }),
  },
  { additionalProperties: false },
);

const VALUE_LOC = ['body', 'value'];

/** Throws 422 naming `value` when it is not one of the choices or does not satisfy the schema. */
export function checkInputValue(options: Record<string, unknown> | null, value: unknown): void {
  if (jsonBytes(value) > MAX_INPUT_VALUE_BYTES) throw bad(VALUE_LOC, es.humanInput.moreThanBytes(MAX_INPUT_VALUE_BYTES));
  if (options && Array.isArray(options.choices)) {
    const wanted = canonicalJson(value);
    if (!options.choices.some((c) => canonicalJson(c) === wanted)) throw bad(VALUE_LOC, es.humanInput.notAChoice, 'choice');
    return;
  }
  if (!options || typeof options.schema !== 'object' || options.schema === null) return;
  const text = canonicalJson(options.schema);
  const verdict = cachedUserSchema(`input:${sha256Hex(text)}`, options.schema, Buffer.byteLength(text));
  if (!verdict.ok) throw bad(VALUE_LOC, es.humanInput.questionSchemaUnusable(verdict.problem.message), 'schema');
  let valid: boolean;
  try {
    valid = withinBudget(() => verdict.validate(value) as boolean);
  } catch (err) {
    if (err instanceof ValidationBudgetExceeded || err instanceof RangeError) throw bad(VALUE_LOC, es.humanInput.overBudget, 'schema_budget');
    throw bad(VALUE_LOC, es.humanInput.couldNotValidate, 'schema');
  }
  if (!valid) {
    const first = verdict.validate.errors?.[0];
    const where = first?.instancePath ? `${first.instancePath}: ` : '';
    throw bad(VALUE_LOC, es.humanInput.schemaMismatch(where, first?.message ?? es.humanInput.notValid), 'schema');
  }
}

export interface JobInputDeps extends AtOnceDeps {
  sql: Sql;
}

/**
 * POST /settings/jobs/{job_id}/input: another workspace's or a missing job → 404; the body's
 * shape → 422; a job not waiting → 409; a value outside the options → 422 naming `value`. Then,
 * in one transaction: `waiting_input → running` guarded by the status, the attempt and the very
 * question that was checked (a robot that asked again meanwhile is not answered with a value
 * meant for another question), the prompt and options cleared, the answer kept for the robot's
 * poll, the timeout running again with the time it had left, an audit row (`answer_job_input`,
 * without the value: it may be anything a person typed) and the `job-input` effect.
 */
export async function answerJobInput(
  deps: JobInputDeps,
  tenantId: string,
  jobId: string,
  body: () => { value: unknown },
  actor: AuditActor,
): Promise<JobWithNames> {
  let parsed: { value: unknown } | null = null;
  for (let round = 0; round < 3; round++) {
    const job = await getJob(deps.sql, tenantId, jobId);
    parsed ??= body();
    if (job.status !== 'waiting_input') {
      throw new ConflictError(es.jobs.notWaitingInput(job.status), { status: job.status });
    }
    checkInputValue(job.pending_input_options, parsed.value);
    const value = parsed.value;
    const row = await inTransactionPublishingAtOnce(deps, async (tx) => {
      const [answered] = await tx<JobRow[]>`
        update jobs j
           set status = ${jobStatusSql(tx, T.answer.to)}, pending_input_prompt = null, pending_input_options = null,
               input_answer = ${tx.json({ value } as never)},
               timeout_at = now() + coalesce(j.input_timeout_left, make_interval(secs => p.timeout_seconds)),
               input_timeout_left = null, updated_at = now()
          from processes p
         where j.id = ${jobId} and j.tenant_id = ${tenantId} and p.id = j.process_id
           and ${jobStatusInSql(tx, 'j.status', T.answer.from)} and j.attempt = ${job.attempt}
           and j.pending_input_prompt = ${job.pending_input_prompt!}
           and j.pending_input_options = ${tx.json(job.pending_input_options as never)}
        returning j.*`;
      if (!answered) return null;
      await recordAudit(tx, {
        ...actor, tenantId, action: 'answer_job_input', resourceType: 'job', resourceId: jobId,
        details: { kind: 'choices' in (job.pending_input_options ?? {}) ? 'choices' : 'schema', attempt: job.attempt },
      });
      await recordEffect(tx, { kind: 'job-input', job_id: jobId, machine_id: answered.machine_id });
      return answered;
    });
    if (row) return { ...row, process_name: job.process_name, machine_name: job.machine_name };
  }
  throw new ConflictError(es.jobs.changedDuringRequest);
}
