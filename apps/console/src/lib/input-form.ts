/**
 * A form made from a process's input_schema (a JSON Schema object), for triggering a job from
 * the console. What a form can say plainly becomes a field of its kind: strings (with their
 * formats), numbers, integers, booleans and enums. Anything else a property may be (objects,
 * arrays, combinations) is a JSON field for that property; a schema that is not an object with
 * properties is one JSON field for the whole input. The API checks the input against the schema
 * with ajv either way: the form only makes a valid input easy to type, never decides validity.
 */
import { localInputToIso } from './admin';

export type FieldKind = 'text' | 'email' | 'url' | 'date' | 'date-time' | 'number' | 'integer' | 'boolean' | 'select' | 'json';

export interface FormField {
  name: string;
  label: string;
  kind: FieldKind;
  required: boolean;
  description?: string;
  /** select: the schema's enum, each as its JSON text (so 1 and "1" stay apart) */
  options?: string[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
}

export type InputForm = { kind: 'fields'; fields: FormField[] } | { kind: 'json' };

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

const FORMATS: Record<string, FieldKind> = { email: 'email', uri: 'url', date: 'date', 'date-time': 'date-time' };

function kindOf(p: Schema): FieldKind {
  if (Array.isArray(p.enum) && p.enum.length > 0 && p.enum.every((v) => ['string', 'number', 'boolean'].includes(typeof v) || v === null)) return 'select';
  if ('const' in p || 'oneOf' in p || 'anyOf' in p || 'allOf' in p || '$ref' in p || 'not' in p) return 'json';
  switch (p.type) {
    case 'string': return FORMATS[String(p.format)] ?? 'text';
    case 'number': return 'number';
    case 'integer': return 'integer';
    case 'boolean': return 'boolean';
    default: return 'json';
  }
}

export function formOf(schema: unknown): InputForm {
  if (!isObject(schema) || schema.type !== 'object' || !isObject(schema.properties)) return { kind: 'json' };
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  const fields = Object.entries(schema.properties).map(([name, raw]): FormField => {
    const p = isObject(raw) ? raw : {};
    const field: FormField = { name, label: typeof p.title === 'string' && p.title ? p.title : name, kind: kindOf(p), required: required.has(name) };
    if (typeof p.description === 'string') field.description = p.description;
    if (field.kind === 'select') field.options = (p.enum as unknown[]).map((v) => JSON.stringify(v));
    if (typeof p.minimum === 'number') field.minimum = p.minimum;
    if (typeof p.maximum === 'number') field.maximum = p.maximum;
    if (typeof p.maxLength === 'number') field.maxLength = p.maxLength;
    return field;
  });
  // Postgres keeps a schema's properties in its own order (jsonb), not the author's: what must be
  // filled comes first, the rest after, each group in the order stored
  return { kind: 'fields', fields: [...fields.filter((f) => f.required), ...fields.filter((f) => !f.required)] };
}

export type FieldValues = Record<string, string | boolean>;

/** What went wrong with a value before it could be sent, by field name (messages from the caller's catalogue). */
export type FieldProblems = Record<string, 'number' | 'integer' | 'json' | 'date'>;

/**
 * The input_data the values make, or the fields whose text cannot be the value its kind needs.
 * An empty optional field is left out (the schema's default, if any, is the robot's to apply);
 * an empty required one is sent as absent so the API names it, in its own words.
 */
export function inputOf(fields: FormField[], values: FieldValues): { data: Record<string, unknown> } | { problems: FieldProblems } {
  const data: Record<string, unknown> = {};
  const problems: FieldProblems = {};
  for (const f of fields) {
    const v = values[f.name];
    if (f.kind === 'boolean') {
      data[f.name] = v === true;
      continue;
    }
    const text = typeof v === 'string' ? v : '';
    if (text.trim() === '') continue;
    switch (f.kind) {
      case 'number':
      case 'integer': {
        const n = Number(text.replace(',', '.'));
        if (!Number.isFinite(n)) problems[f.name] = 'number';
        else if (f.kind === 'integer' && !Number.isInteger(n)) problems[f.name] = 'integer';
        else data[f.name] = n;
        break;
      }
      case 'select':
        data[f.name] = JSON.parse(text);
        break;
      case 'date-time': {
        // a datetime-local value has no zone: it is the browser's, as every date the console shows
        const iso = localInputToIso(text);
        if (iso === null) problems[f.name] = 'date';
        else data[f.name] = iso;
        break;
      }
      case 'json':
        try {
          data[f.name] = JSON.parse(text);
        } catch {
          problems[f.name] = 'json';
        }
        break;
      default:
        data[f.name] = text;
    }
  }
  return Object.keys(problems).length ? { problems } : { data };
}
