/**
 * What the jobs pages decide without the DOM: which jobs still change (and so are read again),
 * which may be stopped, how progress reads, where a job came from, and the form that answers a
 * job waiting for input (docs/decisions/human-input.md), built from the question's options as
 * the API exposes them. Pure, with no texts: jest tests it as it is.
 */
import { formFieldOf, type ApiError } from './errors';

export const JOB_STATUSES = ['pending', 'running', 'waiting_input', 'completed', 'failed', 'stopped', 'timed_out'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** A job in one of these may still change: its page reads it again; an admin may stop it. */
const LIVE: readonly string[] = ['pending', 'running', 'waiting_input'];

export function isLive(status: string): boolean {
  return LIVE.includes(status);
}

/** Stop is offered for a live job whose stop was not yet asked for (the API answers 409 for a finished one). */
export function canStop(job: { status: string; stop_requested: boolean }): boolean {
  return isLive(job.status) && !job.stop_requested;
}

/**
 * The bar's value: the robot's percent, clamped (it is a robot's number), or null when there is
 * none to show: an indeterminate bar while the job runs, nothing once it ended without one.
 * A completed job reads 100 whatever its robot last said.
 */
export function progressValue(job: { status: string; progress_percent: number | null }): number | null {
  if (job.status === 'completed') return 100;
  if (job.progress_percent === null || !Number.isFinite(job.progress_percent)) return null;
  return Math.min(100, Math.max(0, Math.round(job.progress_percent)));
}

export type JobOrigin = 'schedule' | 'trigger' | 'other';

/** Where a job came from, as far as the JobResponse tells: a schedule, a queue trigger, or anything else (API, webhook, chain, retry). */
export function jobOrigin(job: { schedule_id: string | null; trigger_id: string | null }): JobOrigin {
  if (job.schedule_id) return 'schedule';
  if (job.trigger_id) return 'trigger';
  return 'other';
}

/** The job's running time: to its end, or to now while it runs; null before it started. */
export function elapsedMs(job: { started_at: string | null; finished_at: string | null }, now: Date): number | null {
  if (!job.started_at) return null;
  const end = job.finished_at ? new Date(job.finished_at).getTime() : now.getTime();
  return Math.max(0, end - new Date(job.started_at).getTime());
}

// ------------------------------------------------------------------------------------------------
// Answering a job's question

export type InputFieldType = 'string' | 'number' | 'integer' | 'boolean' | 'enum';

export interface InputField {
  /** the property's name in the answer object; '' when the answer is the value itself */
  name: string;
  type: InputFieldType;
  required: boolean;
  /** the schema's title, else its name */
  label: string;
  description?: string;
  /** for `enum`: the values offered, shown as their JSON text unless they are strings */
  options?: unknown[];
}

/**
 * The form a question asks for:
 * - `choices`: pick one of the values offered;
 * - `fields`: an object of flat properties (or one scalar), one control each;
 * - `json`: a schema the form cannot draw (nested, arrays, combinators): a JSON text area.
 */
export type InputForm =
  | { kind: 'choices'; choices: unknown[] }
  | { kind: 'fields'; fields: InputField[]; object: boolean }
  | { kind: 'json'; schema: unknown };

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A scalar property as one control, or null when it is not one the form can draw. */
function fieldOf(name: string, schema: unknown, required: boolean): InputField | null {
  if (!isObject(schema)) return null;
  const label = typeof schema.title === 'string' && schema.title.trim() ? schema.title : name;
  const description = typeof schema.description === 'string' ? schema.description : undefined;
  const base = { name, required, label, ...(description ? { description } : {}) };
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return { ...base, type: 'enum', options: schema.enum };
  if ('const' in schema) return { ...base, type: 'enum', options: [schema.const] };
  const type = schema.type;
  if (type === 'string' || type === 'number' || type === 'integer' || type === 'boolean') return { ...base, type };
  return null;
}

/** The form for a job's `pending_input_options` (null or unknown → a JSON text area, which takes any answer). */
export function inputForm(options: unknown): InputForm {
  if (isObject(options) && Array.isArray(options.choices)) return { kind: 'choices', choices: options.choices };
  const schema = isObject(options) ? options.schema : undefined;
  if (!isObject(schema)) return { kind: 'json', schema: schema ?? null };
  if (schema.type === 'object' && isObject(schema.properties)) {
    const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : [];
    const fields: InputField[] = [];
    for (const [name, prop] of Object.entries(schema.properties)) {
      const field = fieldOf(name, prop, required.includes(name));
      if (!field) return { kind: 'json', schema };
      fields.push(field);
    }
    // a required property the form has no control for could never be answered through it
    if (fields.length === 0 || required.some((r) => !fields.some((f) => f.name === r))) return { kind: 'json', schema };
    return { kind: 'fields', fields, object: true };
  }
  const single = fieldOf('', schema, true);
  return single ? { kind: 'fields', fields: [{ ...single, label: single.label }], object: false } : { kind: 'json', schema };
}

/** How a choice or an enum option reads: strings as they are, anything else as its JSON. */
export function choiceLabel(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** What the form could not turn into a value, per control: the page words it. */
export type InputProblem = 'required' | 'number' | 'integer' | 'json' | 'choice';

export type Built = { ok: true; value: unknown } | { ok: false; problems: Record<string, InputProblem> };

/** The control's key for `fields` forms: the property name, or `value` for a bare scalar. */
export function controlName(field: InputField): string {
  return field.name || 'value';
}

/**
 * The answer the form's raw control values make (texts from inputs and selects: the index of an
 * option for `choices` and `enum`, "true"/"false" for booleans, the text for JSON). The API checks
 * it against the question again; this only catches what cannot be sent at all (an empty required
 * field, "abc" as a number, broken JSON), so nothing leaves the form half-typed.
 */
export function buildAnswer(form: InputForm, raw: Record<string, string>): Built {
  if (form.kind === 'choices') {
    const i = Number(raw.value);
    if (raw.value === undefined || raw.value === '' || !Number.isInteger(i) || i < 0 || i >= form.choices.length) {
      return { ok: false, problems: { value: 'choice' } };
    }
    return { ok: true, value: form.choices[i] };
  }
  if (form.kind === 'json') {
    const text = (raw.value ?? '').trim();
    if (!text) return { ok: false, problems: { value: 'required' } };
    try {
      return { ok: true, value: JSON.parse(text) as unknown };
    } catch {
      return { ok: false, problems: { value: 'json' } };
    }
  }
  const problems: Record<string, InputProblem> = {};
  const answer: Record<string, unknown> = {};
  for (const field of form.fields) {
    const key = controlName(field);
    const text = raw[key] ?? '';
    if (text.trim() === '') {
      // an empty optional field is left out of the object, not sent as ""
      if (field.required && field.type !== 'string') problems[key] = 'required';
      else if (field.required) answer[field.name] = text;
      continue;
    }
    switch (field.type) {
      case 'string':
        answer[field.name] = text;
        break;
      case 'boolean':
        answer[field.name] = text === 'true';
        break;
      case 'number':
      case 'integer': {
        const n = Number(text.trim().replace(',', '.'));
        if (!Number.isFinite(n)) problems[key] = 'number';
        else if (field.type === 'integer' && !Number.isInteger(n)) problems[key] = 'integer';
        else answer[field.name] = n;
        break;
      }
      case 'enum': {
        const i = Number(text);
        const options = field.options ?? [];
        if (!Number.isInteger(i) || i < 0 || i >= options.length) problems[key] = 'choice';
        else answer[field.name] = options[i];
        break;
      }
    }
  }
  if (Object.keys(problems).length > 0) return { ok: false, problems };
  return { ok: true, value: form.object ? answer : answer[''] };
}

/**
 * Where the API's 422 about `value` belongs: its message names the failing property by JSON
 * pointer (`no cumple el schema de la pregunta (/amount: …)`), so it goes next to that control
 * when the form has one; otherwise next to the first control (the answer as a whole).
 */
export function answerErrorPlacement(err: ApiError, controls: readonly string[]): { fields: Record<string, string>; general: string | null } {
  const fields: Record<string, string> = {};
  const elsewhere: string[] = [];
  for (const issue of err.issues) {
    const name = formFieldOf(issue.field);
    if (name !== 'value' || controls.length === 0) {
      elsewhere.push(name ? `${name}: ${issue.message}` : issue.message);
      continue;
    }
    const pointer = /\(\/([^/:\s]+)[:/]/.exec(issue.message)?.[1];
    const target = pointer && controls.includes(pointer) ? pointer : controls[0]!;
    fields[target] ??= issue.message;
  }
  const placed = Object.keys(fields).length > 0;
  const general = elsewhere.length > 0 ? [err.message, ...elsewhere].join(' — ') : placed ? null : err.message;
  return { fields, general };
}
