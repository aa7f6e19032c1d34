import { formOf, inputOf } from '../src/lib/input-form';

describe('formOf', () => {
  it('makes a field of its kind for each simple property, JSON for the rest', () => {
    const form = formOf({
      type: 'object',
      required: ['invoice', 'amount'],
      properties: {
        invoice: { type: 'string', title: 'Factura', maxLength: 20 },
        amount: { type: 'number', minimum: 0 },
        copies: { type: 'integer' },
        urgent: { type: 'boolean' },
        currency: { type: 'string', enum: ['EUR', 'USD'] },
        level: { enum: [1, '1'] },
        due: { type: 'string', format: 'date' },
        at: { type: 'string', format: 'date-time' },
        contact: { type: 'string', format: 'email' },
        lines: { type: 'array', items: { type: 'string' } },
        either: { oneOf: [{ type: 'string' }, { type: 'number' }] },
      },
    });
    expect(form.kind).toBe('fields');
    if (form.kind !== 'fields') return;
    const byName = Object.fromEntries(form.fields.map((f) => [f.name, f]));
    expect(byName.invoice).toMatchObject({ kind: 'text', label: 'Factura', required: true, maxLength: 20 });
    expect(byName.amount).toMatchObject({ kind: 'number', required: true, minimum: 0 });
    expect(byName.copies!.kind).toBe('integer');
    expect(byName.urgent!.kind).toBe('boolean');
    expect(byName.currency).toMatchObject({ kind: 'select', options: ['"EUR"', '"USD"'], required: false });
    expect(byName.level!.options).toEqual(['1', '"1"']);
    expect(byName.due!.kind).toBe('date');
    expect(byName['at']!.kind).toBe('date-time');
    expect(byName.contact!.kind).toBe('email');
    expect(byName.lines!.kind).toBe('json');
    expect(byName.either!.kind).toBe('json');
  });

  it('falls back to one JSON field when the schema is not an object with properties', () => {
    expect(formOf(null)).toEqual({ kind: 'json' });
    expect(formOf({ type: 'array' })).toEqual({ kind: 'json' });
    expect(formOf({ type: 'object' })).toEqual({ kind: 'json' });
    expect(formOf('nope')).toEqual({ kind: 'json' });
  });
});

describe('inputOf', () => {
  const form = formOf({
    type: 'object',
    properties: {
      name: { type: 'string' }, n: { type: 'number' }, i: { type: 'integer' }, ok: { type: 'boolean' },
      pick: { enum: [1, 'a'] }, at: { type: 'string', format: 'date-time' }, extra: { type: 'object' },
    },
  });
  const fields = form.kind === 'fields' ? form.fields : [];

  it('types each value and leaves empty optional fields out', () => {
    expect(inputOf(fields, { name: 'Ana', n: '2,5', i: '3', ok: true, pick: '1', at: '2026-01-02T03:04', extra: '{"k":[1]}' })).toEqual({
      data: { name: 'Ana', n: 2.5, i: 3, ok: true, pick: 1, at: new Date('2026-01-02T03:04').toISOString(), extra: { k: [1] } },
    });
    expect(inputOf(fields, { name: '  ', ok: false })).toEqual({ data: { ok: false } });
  });

  it('names the fields whose text cannot be their value', () => {
    expect(inputOf(fields, { n: 'abc', i: '1.5', extra: '{', at: 'mañana' })).toEqual({ problems: { n: 'number', i: 'integer', extra: 'json', at: 'date' } });
  });
});
