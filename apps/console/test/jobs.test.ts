import { ApiError } from '../src/lib/errors';
import {
  answerErrorPlacement, buildAnswer, canStop, choiceLabel, elapsedMs, inputForm, isLive, jobOrigin, progressValue, type InputForm,
} from '../src/lib/jobs';

/** What the jobs pages decide without the DOM: live jobs, stop, progress, origin, and the answer form. */
describe('jobs in the console', () => {
  it('reads again and offers stop only while a job may change, and not twice', () => {
    expect(['pending', 'running', 'waiting_input'].map(isLive)).toEqual([true, true, true]);
    expect(['completed', 'failed', 'stopped', 'timed_out', 'nonsense'].map(isLive)).toEqual([false, false, false, false, false]);
    expect(canStop({ status: 'running', stop_requested: false })).toBe(true);
    expect(canStop({ status: 'running', stop_requested: true })).toBe(false);
    expect(canStop({ status: 'waiting_input', stop_requested: false })).toBe(true);
    expect(canStop({ status: 'completed', stop_requested: false })).toBe(false);
  });

  it('clamps and rounds the robot\'s percent, reads 100 for a completed job and null when there is none', () => {
    expect(progressValue({ status: 'running', progress_percent: 42 })).toBe(42);
    expect(progressValue({ status: 'running', progress_percent: 41.6 })).toBe(42);
    expect(progressValue({ status: 'running', progress_percent: 140 })).toBe(100);
    expect(progressValue({ status: 'running', progress_percent: -3 })).toBe(0);
    expect(progressValue({ status: 'running', progress_percent: null })).toBeNull();
    expect(progressValue({ status: 'running', progress_percent: Number.NaN })).toBeNull();
    expect(progressValue({ status: 'completed', progress_percent: 60 })).toBe(100);
    expect(progressValue({ status: 'failed', progress_percent: 60 })).toBe(60);
  });

  it('tells a job\'s origin and its running time', () => {
    expect(jobOrigin({ schedule_id: 's', trigger_id: null })).toBe('schedule');
    expect(jobOrigin({ schedule_id: null, trigger_id: 't' })).toBe('trigger');
    expect(jobOrigin({ schedule_id: null, trigger_id: null })).toBe('other');
    const now = new Date('2026-01-01T10:00:10Z');
    expect(elapsedMs({ started_at: null, finished_at: null }, now)).toBeNull();
    expect(elapsedMs({ started_at: '2026-01-01T10:00:00Z', finished_at: null }, now)).toBe(10_000);
    expect(elapsedMs({ started_at: '2026-01-01T10:00:00Z', finished_at: '2026-01-01T10:00:03Z' }, now)).toBe(3_000);
  });

  it('offers the choices of a choices question and answers with the value picked, objects and null included', () => {
    const form = inputForm({ choices: ['aprobar', { a: 1 }, null] });
    expect(form).toEqual({ kind: 'choices', choices: ['aprobar', { a: 1 }, null] });
    expect(buildAnswer(form, { value: '1' })).toEqual({ ok: true, value: { a: 1 } });
    expect(buildAnswer(form, { value: '2' })).toEqual({ ok: true, value: null });
    expect(buildAnswer(form, {})).toEqual({ ok: false, problems: { value: 'choice' } });
    expect(buildAnswer(form, { value: '7' })).toEqual({ ok: false, problems: { value: 'choice' } });
    expect([choiceLabel('aprobar'), choiceLabel({ a: 1 }), choiceLabel(null)]).toEqual(['aprobar', '{"a":1}', 'null']);
  });

  it('draws a flat object schema as one control per property and builds the object, typed', () => {
    const form = inputForm({ schema: {
      type: 'object', required: ['amount', 'currency'],
      properties: {
        amount: { type: 'number', title: 'Importe', description: 'En euros' },
        count: { type: 'integer' },
        currency: { enum: ['EUR', 'USD'] },
        urgent: { type: 'boolean' },
        note: { type: 'string' },
      },
    } });
    expect(form.kind).toBe('fields');
    const fields = (form as Extract<InputForm, { kind: 'fields' }>).fields;
    expect(fields.map((f) => [f.name, f.type, f.required, f.label])).toEqual([
      ['amount', 'number', true, 'Importe'], ['count', 'integer', false, 'count'], ['currency', 'enum', true, 'currency'],
      ['urgent', 'boolean', false, 'urgent'], ['note', 'string', false, 'note'],
    ]);
    expect(fields[0]!.description).toBe('En euros');
    expect(buildAnswer(form, { amount: '10,5', count: '3', currency: '1', urgent: 'true', note: '' }))
      .toEqual({ ok: true, value: { amount: 10.5, count: 3, currency: 'USD', urgent: true } });
    expect(buildAnswer(form, { amount: 'diez', count: '1.5', currency: '' })).toEqual({
      ok: false, problems: { amount: 'number', count: 'integer', currency: 'required' },
    });
  });

  it('draws a scalar schema as one control whose value is the answer itself', () => {
    const form = inputForm({ schema: { type: 'integer', minimum: 0 } });
    expect(form).toMatchObject({ kind: 'fields', object: false, fields: [{ name: '', type: 'integer', required: true }] });
    expect(buildAnswer(form, { value: '12' })).toEqual({ ok: true, value: 12 });
    expect(buildAnswer(form, { value: '' })).toEqual({ ok: false, problems: { value: 'required' } });
  });

  it('falls back to a JSON text area for a schema it cannot draw, or no options at all', () => {
    const nested = { type: 'object', properties: { lines: { type: 'array', items: { type: 'number' } } } };
    expect(inputForm({ schema: nested })).toEqual({ kind: 'json', schema: nested });
    expect(inputForm({ schema: { anyOf: [{ type: 'string' }, { type: 'number' }] } }).kind).toBe('json');
    // a required property without a control could never be answered through the fields
    expect(inputForm({ schema: { type: 'object', required: ['x'], properties: { y: { type: 'string' } } } }).kind).toBe('json');
    expect(inputForm(null)).toEqual({ kind: 'json', schema: null });
    const form = inputForm({ schema: nested });
    expect(buildAnswer(form, { value: '{"lines": [1, 2]}' })).toEqual({ ok: true, value: { lines: [1, 2] } });
    expect(buildAnswer(form, { value: '{lines' })).toEqual({ ok: false, problems: { value: 'json' } });
    expect(buildAnswer(form, { value: '  ' })).toEqual({ ok: false, problems: { value: 'required' } });
  });

  it('puts the API\'s message about value next to the property its JSON pointer names, else the first control', () => {
    const err = (message: string) => new ApiError(422, 'VALIDATION_ERROR', message, [{ field: 'body → value', message }]);
    const schemaMsg = 'no cumple el schema de la pregunta (/amount: must be >= 0)';
    expect(answerErrorPlacement(err(schemaMsg), ['currency', 'amount'])).toEqual({ fields: { amount: schemaMsg }, general: null });
    const required = "no cumple el schema de la pregunta (must have required property 'amount')";
    expect(answerErrorPlacement(err(required), ['currency', 'amount'])).toEqual({ fields: { currency: required }, general: null });
    const choice = 'no es una de las opciones ofrecidas (pending_input_options.choices)';
    expect(answerErrorPlacement(err(choice), ['value'])).toEqual({ fields: { value: choice }, general: null });
  });

  it('keeps a conflict or an issue about another field in the form\'s general line', () => {
    expect(answerErrorPlacement(new ApiError(409, 'CONFLICT', 'El job no está esperando una respuesta (estado: running)'), ['value']))
      .toEqual({ fields: {}, general: 'El job no está esperando una respuesta (estado: running)' });
    const other = new ApiError(422, 'VALIDATION_ERROR', 'Error de validación', [{ field: 'body → comment', message: 'no permitido' }]);
    expect(answerErrorPlacement(other, ['value'])).toEqual({ fields: {}, general: 'Error de validación — comment: no permitido' });
  });
});
