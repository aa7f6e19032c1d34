import { assetEnvValue, decimalOrText, dependantsOf, numberOrText, parseList, parseSchemaText, sampleFromSchema } from '../src/lib/catalogue';

describe('the input_schema text', () => {
  it('is null when empty, an object when it parses to one, else says why', () => {
    expect(parseSchemaText('  ')).toEqual({ ok: true, value: null });
    expect(parseSchemaText('{"type":"object"}')).toEqual({ ok: true, value: { type: 'object' } });
    expect(parseSchemaText('{"type":')).toEqual({ ok: false, reason: 'syntax' });
    expect(parseSchemaText('[1]')).toEqual({ ok: false, reason: 'not-object' });
    expect(parseSchemaText('"x"')).toEqual({ ok: false, reason: 'not-object' });
  });
});

describe('a sample input from a schema', () => {
  it('uses defaults, consts, examples and enums, else an empty value of the type', () => {
    expect(sampleFromSchema({
      type: 'object',
      properties: {
        invoice: { type: 'string', examples: ['INV-1'] },
        amount: { type: 'number', minimum: 1 },
        count: { type: 'integer' },
        urgent: { type: 'boolean', default: true },
        currency: { enum: ['EUR', 'USD'] },
        kind: { const: 'invoice' },
        lines: { type: 'array', items: { type: 'string' } },
        note: { type: ['null', 'string'] },
      },
    })).toEqual({ invoice: 'INV-1', amount: 1, count: 0, urgent: true, currency: 'EUR', kind: 'invoice', lines: [''], note: '' });
  });

  it('follows local $refs and combinators, and ends on a recursive schema', () => {
    expect(sampleFromSchema({ $defs: { id: { type: 'string', default: 'a' } }, type: 'object', properties: { id: { $ref: '#/$defs/id' } } })).toEqual({ id: 'a' });
    expect(sampleFromSchema({ allOf: [{ properties: { a: { type: 'integer' } } }, { properties: { b: { type: 'boolean' } } }] })).toEqual({ a: 0, b: false });
    expect(sampleFromSchema({ oneOf: [{ type: 'string' }, { type: 'integer' }] })).toBe('');
    const recursive = { type: 'object', properties: { child: { $ref: '#' } } };
    expect(JSON.stringify(sampleFromSchema(recursive)).length).toBeLessThan(200);
  });
});

describe('form values', () => {
  it('lists split by commas or lines without repeats; whole numbers become numbers, anything else stays as typed', () => {
    expect(parseList('a, b\nc,, a ')).toEqual(['a', 'b', 'c']);
    expect(numberOrText(' 12 ')).toBe(12);
    expect(numberOrText('1.5')).toBe('1.5');
    expect(numberOrText('')).toBe('');
  });

  it('a number of days with decimals, a decimal comma too; anything else goes as typed for the API to refuse', () => {
    expect(decimalOrText('0,5')).toBe(0.5);
    expect(decimalOrText(' 30 ')).toBe(30);
    expect(decimalOrText('1.25')).toBe(1.25);
    expect(decimalOrText('-1')).toBe(-1);
    expect(decimalOrText('1,2,3')).toBe('1,2,3');
    expect(decimalOrText('treinta')).toBe('treinta');
    expect(decimalOrText('')).toBe('');
  });

  it('an asset value per type; empty sends nothing, remove sends null, a credential goes whole', () => {
    const v = { text: '', username: '', password: '', remove: false };
    expect(assetEnvValue('text', v)).toBeUndefined();
    expect(assetEnvValue('text', { ...v, text: 'hola' })).toBe('hola');
    expect(assetEnvValue('integer', { ...v, text: '42' })).toBe(42);
    expect(assetEnvValue('integer', { ...v, text: 'x' })).toBe('x');
    expect(assetEnvValue('boolean', { ...v, text: 'false' })).toBe(false);
    expect(assetEnvValue('credential', { ...v, username: 'u', password: 'p' })).toEqual({ username: 'u', password: 'p' });
    expect(assetEnvValue('credential', v)).toBeUndefined();
    expect(assetEnvValue('credential', { ...v, username: 'u', remove: true })).toBeNull();
  });
});

describe('what depends on a record', () => {
  const P = '00000000-0000-4000-8000-000000000001';
  const M = '00000000-0000-4000-8000-000000000002';
  const Q = '00000000-0000-4000-8000-000000000003';
  const F = '00000000-0000-4000-8000-000000000004';
  const lists = {
    processes: [
      { id: P, name: 'Facturas', is_active: true, folder_id: F, on_success_trigger_process_id: null, required_assets: ['erp'] },
      { id: 'p2', name: 'Cierre', is_active: true, folder_id: F, on_success_trigger_process_id: P, required_assets: [] },
      { id: 'p3', name: 'Viejo', is_active: false, folder_id: F, on_success_trigger_process_id: P, required_assets: ['erp'] },
    ],
    queues: [{ id: Q, name: 'facturas', is_active: true, consumer_process_id: P }],
    triggers: [{ id: 't1', is_active: true, queue_id: Q, process_id: P, machine_id: M }, { id: 't2', is_active: false, queue_id: Q, process_id: P, machine_id: null }],
    schedules: [{ id: 's1', name: 'Diario', is_active: true, process_id: P, machine_id: M }],
  };

  it('names the active records that point at it, by kind', () => {
    expect(dependantsOf('process', { id: P, name: 'Facturas' }, lists)).toEqual([
      { kind: 'queues', names: ['facturas'] },
      { kind: 'triggers', names: ['facturas'] },
      { kind: 'schedules', names: ['Diario'] },
      { kind: 'processes', names: ['Cierre'] },
    ]);
    expect(dependantsOf('machine', { id: M, name: 'm' }, lists)).toEqual([{ kind: 'triggers', names: ['facturas'] }, { kind: 'schedules', names: ['Diario'] }]);
    expect(dependantsOf('queue', { id: Q, name: 'facturas' }, lists)).toEqual([{ kind: 'triggers', names: ['Facturas'] }]);
    expect(dependantsOf('folder', { id: F, name: 'f' }, lists)).toEqual([{ kind: 'processes', names: ['Facturas', 'Cierre'] }]);
    expect(dependantsOf('asset', { id: 'a', name: 'erp' }, lists)).toEqual([{ kind: 'processes', names: ['Facturas'] }]);
  });

  it('is empty when nothing points at it', () => {
    expect(dependantsOf('machine', { id: 'other', name: 'x' }, lists)).toEqual([]);
    expect(dependantsOf('folder', { id: F, name: 'f' }, {})).toEqual([]);
  });
});
