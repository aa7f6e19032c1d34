import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { createSql } from '@svc/core';
import { databaseSuite, seedQueue, seedTenant, waitFor } from '@svc/testing';
import { main, type CliIo } from '../src/main';
import { BIN, ROOT, runCli, type Run } from './cli-harness';

/**
 * `svc items import` against this file's own database: in process through `main` (its own
 * streams), and once as the real compiled binary reading its standard input.
 */
jest.setTimeout(60_000);
const s = databaseSuite();
const tmp = mkdtempSync(path.join(tmpdir(), 'svc-items-import-'));

async function svc(args: string[], extra: Partial<CliIo> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    env: { DATABASE_URL: s.ctx.childEnv.DATABASE_URL },
    readStdin: async () => '',
    ...extra,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

const jsonLines = (r: Run) => r.stdout.trim().split('\n').map((l) => JSON.parse(l));

function file(name: string, content: string | Buffer): string {
  const f = path.join(tmp, name);
  writeFileSync(f, content);
  return f;
}

const ndjson = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ data: { seq: from + i } })).join('\n') + '\n';

/** A tenant with one queue of its own, so counts are exact. */
async function world() {
  const tenant = await seedTenant(s.sql);
  const queue = (await seedQueue(s.sql, tenant.id)) as { id: string; name: string };
  const args = (f: string, ...more: string[]) => ['items', 'import', '--tenant', tenant.name, '--queue', queue.name, f, ...more];
  const count = async () => (await s.sql`select count(*)::int as n from queue_items where queue_id = ${queue.id}`)[0]!.n as number;
  const items = () => s.sql`select priority, reference, deadline, postpone, data, status from queue_item_records where queue_id = ${queue.id} order by created_at, id`;
  return { tenant, queue, args, count, items };
}

describe('svc items import: NDJSON and CSV', () => {
  it('adds each NDJSON line as an item with its fields, skipping blank lines and reading CRLF', async () => {
    const w = await world();
    const f = file('fields.ndjson', [
      '{"data":{"a":1},"reference":"r-1"}',
      '{"data":{"b":{"c":[true,null]}},"priority":5}\r',
      '',
      '{"data":{},"deadline":"2030-01-02T03:04:05Z","postpone":"2029-12-31T00:00:00+01:00","reference":null}',
    ].join('\n'));
    const r = await svc(w.args(f));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`Imported ${f} into queue ${w.queue.name} of tenant ${w.tenant.name}: 3 items added (1 chunk)\n`);
    expect(await w.items()).toEqual([
      { priority: 3, reference: 'r-1', deadline: null, postpone: null, data: { a: 1 }, status: 'new' },
      { priority: 5, reference: null, deadline: null, postpone: null, data: { b: { c: [true, null] } }, status: 'new' },
      {
        priority: 3, reference: null, deadline: new Date('2030-01-02T03:04:05Z'), postpone: new Date('2029-12-30T23:00:00Z'), data: {}, status: 'new',
      },
    ]);
  });

  it('maps CSV columns: the reserved ones to fields, the others to data as strings, empty cells left out', async () => {
    const w = await world();
    const f = file('rows.csv', '\ufeffname,amount,reference,priority,deadline\r\n'
      + 'Ana,10,inv-1,5,2030-01-01T00:00:00Z\r\n'
      + '"Smith, ""Bob""\nJr.",,,,\r\n'
      + ',7,,,\r\n');
    const r = await svc(w.args(f, '--json'));
    expect(r.code).toBe(0);
    expect(jsonLines(r)).toEqual([
      { chunk: 1, lines: [2, 5], items: 3, added: 3, replayed: false },
      { done: true, tenant: w.tenant.name, queue: w.queue.name, format: 'csv', chunks: 1, items: 3, added: 3, replayed_chunks: 0 },
    ]);
    expect(await w.items()).toEqual([
      { priority: 5, reference: 'inv-1', deadline: new Date('2030-01-01T00:00:00Z'), postpone: null, data: { name: 'Ana', amount: '10' }, status: 'new' },
      { priority: 3, reference: null, deadline: null, postpone: null, data: { name: 'Smith, "Bob"\nJr.' }, status: 'new' },
      { priority: 3, reference: null, deadline: null, postpone: null, data: { amount: '7' }, status: 'new' },
    ]);
  });

  it('keeps a carriage return inside a quoted CSV cell, in an LF file and in a CRLF one', async () => {
    const w = await world();
    const lf = file('cr-lf.csv', 'name,note\n"first\r\nsecond",a\n"ends in CRLF\r\n",b\n"\r\n",c\n"mixed\nends\r\n",d\nplain,e\n');
    const r = await svc(w.args(lf, '--json'));
    expect(r.code).toBe(0);
    expect(jsonLines(r)[0]).toEqual({ chunk: 1, lines: [2, 11], items: 5, added: 5, replayed: false });
    const crlf = file('cr-crlf.csv', 'name,note\r\n"first\r\nsecond",a\r\n"two\r\n\r\nbreaks",b\r\nplain,c\r\n');
    const r2 = await svc(w.args(crlf, '--json'));
    expect(r2.code).toBe(0);
    expect(jsonLines(r2)[0]).toEqual({ chunk: 1, lines: [2, 7], items: 3, added: 3, replayed: false });
    expect((await w.items()).map((i) => i.data)).toEqual([
      { name: 'first\r\nsecond', note: 'a' }, { name: 'ends in CRLF\r\n', note: 'b' }, { name: '\r\n', note: 'c' }, { name: 'mixed\nends\r\n', note: 'd' },
      { name: 'plain', note: 'e' },
      { name: 'first\r\nsecond', note: 'a' }, { name: 'two\r\n\r\nbreaks', note: 'b' }, { name: 'plain', note: 'c' },
    ]);

    // a long file: every cell keeps its own line ends, whatever the rows before it
    const many = await world();
    const rows = Array.from({ length: 5000 }, (_, i) => (i % 3 === 0 ? `"${i}\r\nx",${i}\r\n` : i % 3 === 1 ? `"${i}\nx",${i}\n` : `${i},${i}\r\n`));
    const r3 = await svc(many.args(file('cr-many.csv', `name,note\n${rows.join('')}`), '--json'));
    expect(r3.code).toBe(0);
    const names = (await many.items()).map((i) => i.data as { name: string; note: string })
      .sort((a, b) => Number(a.note) - Number(b.note)).map((d) => d.name);
    expect(names).toEqual(Array.from({ length: 5000 }, (_, i) => (i % 3 === 0 ? `${i}\r\nx` : i % 3 === 1 ? `${i}\nx` : `${i}`)));
  });

  it('splits a file into chunks of --chunk-size rows, one JSON line per chunk with its physical lines', async () => {
    const w = await world();
    const f = file('chunks.ndjson', ndjson(2500));
    const r = await svc(w.args(f, '--json'));
    expect(r.code).toBe(0);
    expect(jsonLines(r)).toEqual([
      { chunk: 1, lines: [1, 1000], items: 1000, added: 1000, replayed: false },
      { chunk: 2, lines: [1001, 2000], items: 1000, added: 1000, replayed: false },
      { chunk: 3, lines: [2001, 2500], items: 500, added: 500, replayed: false },
      expect.objectContaining({ done: true, chunks: 3, items: 2500, added: 2500 }),
    ]);
    expect(await w.count()).toBe(2500);
    const [{ lo, hi, distinct }] = await s.sql`
      select min((data->>'seq')::int) as lo, max((data->>'seq')::int) as hi, count(distinct data->>'seq')::int as distinct
      from queue_item_records where queue_id = ${w.queue.id}`;
    expect([lo, hi, distinct]).toEqual([0, 2499, 2500]);

    const small = await world();
    const r2 = await svc(small.args(file('small.ndjson', ndjson(5)), '--chunk-size', '2', '--json'));
    expect(jsonLines(r2).slice(0, -1).map((c) => c.lines)).toEqual([[1, 2], [3, 4], [5, 5]]);
    expect(await small.count()).toBe(5);
  });

  it('reads standard input with --format, and refuses - without it', async () => {
    const w = await world();
    const r = await svc(w.args('-', '--format', 'csv', '--json'), { stdinStream: () => Readable.from([Buffer.from('x\n1\n'), Buffer.from('2\n')]) });
    expect(r.code).toBe(0);
    expect(jsonLines(r)[0]).toEqual({ chunk: 1, lines: [2, 3], items: 2, added: 2, replayed: false });
    expect((await w.items()).map((i) => i.data)).toEqual([{ x: '1' }, { x: '2' }]);
    const missing = await svc(w.args('-'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^svc: --format is required when reading standard input/);
  });

  it('streams: the first chunk commits before the rest of the input exists', async () => {
    const w = await world();
    let firstChunk!: () => void;
    const committed = new Promise<void>((resolve) => (firstChunk = resolve));
    async function* input() {
      yield Buffer.from(ndjson(1001));
      // a reader that waited for the end of its input would never get past this point
      await committed;
      yield Buffer.from(ndjson(9, 1001));
    }
    let stdout = '';
    const r = await svc(w.args('-', '--format', 'ndjson', '--json'), {
      stdinStream: input,
      stdout: (t) => {
        stdout += t;
        if (stdout.includes('"chunk":1')) firstChunk();
      },
    });
    expect(r.code).toBe(0);
    expect(stdout.trim().split('\n').map((l) => JSON.parse(l)).slice(0, 2).map((c) => c.items)).toEqual([1000, 10]);
    expect(await w.count()).toBe(1010);
  });

  it('the compiled binary streams its standard input', async () => {
    const w = await world();
    const r = await runCli(s.ctx.childEnv, w.args('-', '--format', 'ndjson'), { input: ndjson(1200) });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`Imported stdin into queue ${w.queue.name} of tenant ${w.tenant.name}: 1200 items added (2 chunks)\n`);
    expect(await w.count()).toBe(1200);
  });
});

describe('svc items import: running again', () => {
  it('adds nothing twice: a re-run replays every chunk', async () => {
    const w = await world();
    const f = file('again.ndjson', ndjson(1500));
    expect((await svc(w.args(f))).code).toBe(0);
    const again = await svc(w.args(f, '--json'));
    expect(again.code).toBe(0);
    expect(jsonLines(again)).toEqual([
      { chunk: 1, lines: [1, 1000], items: 1000, added: 0, replayed: true },
      { chunk: 2, lines: [1001, 1500], items: 500, added: 0, replayed: true },
      expect.objectContaining({ items: 1500, added: 0, replayed_chunks: 2 }),
    ]);
    expect(await w.count()).toBe(1500);
    const text = await svc(w.args(f));
    expect(text.stdout).toMatch(/: 0 items added, 1500 already added by an earlier run \(2 chunks\)\n$/);
  });

  it('after a run that stopped mid-way, the whole file adds only what is missing', async () => {
    const w = await world();
    const whole = ndjson(2500);
    // the run that "crashed" had committed its first two chunks: the first 2,000 lines
    const crashed = file('crashed.ndjson', whole.split('\n').slice(0, 2000).join('\n') + '\n');
    expect((await svc(w.args(crashed))).code).toBe(0);
    expect(await w.count()).toBe(2000);
    const r = await svc(w.args(file('whole.ndjson', whole), '--json'));
    expect(r.code).toBe(0);
    expect(jsonLines(r).slice(0, 3).map((c) => [c.replayed, c.added])).toEqual([[true, 0], [true, 0], [false, 500]]);
    expect(await w.count()).toBe(2500);
    const [{ distinct }] = await s.sql`select count(distinct data->>'seq')::int as distinct from queue_item_records where queue_id = ${w.queue.id}`;
    expect(distinct).toBe(2500);
  });

  it('after a run killed mid-chunk, a re-run waits out its claim and adds every row once', async () => {
    const w = await world();
    const f = file('killed.ndjson', ndjson(1500));
    // inserts into queue_items wait behind this lock: the first run claims chunk 1's key, then blocks
    // its own connection: the suite's pool must stay free for the probes below
    const holder = createSql(s.ctx.childEnv.DATABASE_URL!, { max: 1 });
    const held = await holder.reserve();
    await held`begin`;
    await held`lock table queue_items in share mode`;
    const killed = spawn(process.execPath, [BIN, ...w.args(f)], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...s.ctx.childEnv } });
    const gone = new Promise((resolve) => killed.on('close', resolve));
    try {
      await waitFor('the first run to claim chunk 1', async () =>
        (await s.sql`select 1 from idempotency_keys where tenant_id = ${w.tenant.id} and scope = 'queue-items.import' and status is null`).length > 0);
      killed.kill('SIGKILL');
      await gone;
    } finally {
      await held`rollback`;
      held.release();
      await holder.end({ timeout: 5 });
    }
    // its transaction never commits (its client is gone); its claim stays in flight for the lease
    let stderr = '';
    let aged: Promise<unknown> | undefined;
    const r = await svc(w.args(f, '--json'), {
      stderr: (t) => {
        stderr += t;
        // the lease running out, without waiting a minute
        if (!aged && t.includes('is in flight')) {
          // postgres.js sends a query once it is awaited: Promise.resolve does that here
          aged = Promise.resolve(s.sql`update idempotency_keys set created_at = created_at - interval '61 seconds'
                     where tenant_id = ${w.tenant.id} and scope = 'queue-items.import' and status is null`);
        }
      },
    });
    await aged;
    expect(stderr).toMatch(/^svc: chunk 1 is in flight in another run, or in one that stopped: waiting for it/);
    expect(r.code).toBe(0);
    expect(jsonLines(r).slice(0, 2)).toEqual([
      { chunk: 1, lines: [1, 1000], items: 1000, added: 1000, replayed: false },
      { chunk: 2, lines: [1001, 1500], items: 500, added: 500, replayed: false },
    ]);
    const [{ n, distinct }] = await s.sql`
      select count(*)::int as n, count(distinct data->>'seq')::int as distinct from queue_item_records where queue_id = ${w.queue.id}`;
    expect([n, distinct]).toEqual([1500, 1500]);
  });

  it('stops at a bad row: its chunk adds nothing, earlier chunks stay, and the fixed file completes the import', async () => {
    const w = await world();
    const lines = ndjson(2500).split('\n');
    lines[1499] = '{"data":{"seq":1499},"priority":"high"}';
    const bad = await svc(w.args(file('bad-row.ndjson', lines.join('\n')), '--json'));
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stderr)).toEqual({
      success: false, error: { code: 'VALIDATION_ERROR', message: 'line 1500: priority: debe ser integer' },
    });
    // chunk 1 committed and was reported; chunk 2 (lines 1001..2000) and chunk 3 were not sent
    expect(jsonLines(bad)).toEqual([{ chunk: 1, lines: [1, 1000], items: 1000, added: 1000, replayed: false }]);
    expect(await w.count()).toBe(1000);
    const text = await svc(w.args(file('bad-row.ndjson', lines.join('\n'))));
    expect(text.stderr).toBe('svc: line 1500: priority: debe ser integer\n');

    lines[1499] = '{"data":{"seq":1499},"priority":4}';
    const fixed = await svc(w.args(file('bad-row.ndjson', lines.join('\n')), '--json'));
    expect(fixed.code).toBe(0);
    expect(jsonLines(fixed).slice(0, 3).map((c) => c.replayed)).toEqual([true, false, false]);
    expect(await w.count()).toBe(2500);
  });

  it('treats a chunk under another CSV header as another chunk (the same rows mean other data)', async () => {
    const w = await world();
    expect((await svc(w.args(file('h1.csv', 'a\n1\n')))).code).toBe(0);
    expect((await svc(w.args(file('h2.csv', 'b\n1\n')))).code).toBe(0);
    expect((await w.items()).map((i) => i.data)).toEqual([{ a: '1' }, { b: '1' }]);
  });

  it('the same rows in another queue are added there too', async () => {
    const w = await world();
    const other = (await seedQueue(s.sql, w.tenant.id)) as { id: string; name: string };
    const f = file('two-queues.ndjson', ndjson(3));
    expect((await svc(w.args(f))).code).toBe(0);
    expect((await svc(['items', 'import', '--tenant', w.tenant.id, '--queue', other.name, f])).code).toBe(0);
    const [{ n }] = await s.sql`select count(*)::int as n from queue_items where queue_id = ${other.id}`;
    expect([await w.count(), n]).toEqual([3, 3]);
  });
});

describe('svc items import: hostile input', () => {
  const cases: Array<[string, string, string | Buffer, string]> = [
    ['invalid JSON', 'a.ndjson', '{"data":{}}\n{"data":{}\n', 'line 2: invalid JSON: '],
    ['a line that is not an object', 'a.ndjson', '{"data":{}}\n[1,2]\n', 'line 2: row: debe ser object'],
    ['data of the wrong type', 'a.ndjson', '{"data":"x"}\n', 'line 1: data: debe ser object'],
    ['a missing data', 'a.ndjson', '{"reference":"r"}\n', "line 1: data: debe tener la propiedad requerida data"],
    ['an unknown field', 'a.ndjson', '{"data":{},"prioirty":3}\n', 'line 1: prioirty: no debe tener propiedades adicionales'],
    ['a priority out of range', 'a.ndjson', '{"data":{},"priority":9}\n', 'line 1: priority: debe ser <= 5'],
    ['a date without a time zone', 'a.ndjson', '{"data":{},"deadline":"2030-01-01T00:00:00"}\n', 'line 1: deadline: '],
    ['a date Postgres cannot store', 'a.ndjson', '{"data":{},"postpone":"0000-01-01T00:00:00Z"}\n', 'line 1: postpone: la fecha está fuera del rango admitido'],
    ['an escaped NUL', 'a.ndjson', '{"data":{"ok":1}}\n{"data":{"x":"a\\u0000b"}}\n', 'line 2: data → x: no puede contener el carácter nulo'],
    ['a raw NUL byte in JSON', 'a.ndjson', Buffer.from('{"data":{"x":"a\u0000b"}}\n'), 'line 1: invalid JSON: '],
    ['a lone surrogate', 'a.ndjson', '{"data":{"x":"\\ud800"}}\n', 'line 1: data → x: '],
    ['a __proto__ key', 'a.ndjson', '{"data":{"__proto__":{"admin":true}}}\n', 'line 1: data → __proto__: '],
    ['nesting past the bound', 'a.ndjson', `{"data":${'['.repeat(70)}${']'.repeat(70)}}\n`, 'line 1: data → 0 → 0'],
    ['absurd nesting', 'a.ndjson', `{"data":{}}\n{"data":${'['.repeat(200_000)}${']'.repeat(200_000)}}\n`, 'line 2: '],
    ['invalid UTF-8', 'a.ndjson', Buffer.concat([Buffer.from('{"data":{}}\n{"data":{"x":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}\n')]), 'line 2: not valid UTF-8'],
    ['a line over 2 MiB', 'a.ndjson', `{"data":{}}\n{"data":{"x":"${'a'.repeat(2 * 1024 * 1024)}"}}\n`, 'line 2: longer than 2 MiB'],
    ['an endless line', 'a.ndjson', 'x'.repeat(5 * 1024 * 1024), 'line 1: longer than 2 MiB'],
    ['a NUL byte in a CSV cell', 'a.csv', Buffer.from('x\nok\na\u0000b\n'), 'line 3: data → x: no puede contener el carácter nulo'],
    ['a duplicate CSV header', 'a.csv', 'x,y,x\n1,2,3\n', 'line 1: the header names column "x" twice'],
    ['a __proto__ CSV column', 'a.csv', 'x,__proto__\n1,2\n', 'line 1: the header\'s column "__proto__" cannot name a key of data'],
    ['an unnamed CSV column', 'a.csv', 'x,,y\n1,2,3\n', "line 1: the header's column 2 has no name"],
    ['a CSV header without data columns', 'a.csv', 'reference,priority\nr,3\n', 'line 1: the header has no column for data'],
    ['an empty CSV file', 'a.csv', '', 'line 1: no header row'],
    ['a CSV row with too few fields', 'a.csv', 'x,y\n1,2\n"multi\nline",2\n3\n', 'line 5: 1 field where the header has 2'],
    ['a CSV row with too many fields', 'a.csv', 'x,y\n1,2,3\n', 'line 2: 3 fields where the header has 2'],
    ['an unclosed CSV quote', 'a.csv', 'x,y\n1,2\n"open,2\n3,4\n', 'line 3: invalid CSV: a quoted field opened in this row is never closed'],
    ['a CSV priority that is not a number', 'a.csv', 'x,priority\n1,high\n', 'line 2: priority: debe ser integer'],
    ['a bare quote inside a CSV field', 'a.csv', 'x,y\n1,2\na"b,2\n', 'line 3: invalid CSV: '],
    ['invalid UTF-8 in CSV', 'a.csv', Buffer.concat([Buffer.from('x\n'), Buffer.from([0xff, 0xfe]), Buffer.from('\n')]), 'line 2: not valid UTF-8'],
  ];

  it.each(cases)('%s: exit code 2, "line N: …", nothing of the chunk added', async (_name, ext, content, message) => {
    const w = await world();
    const f = file(`hostile-${Math.random().toString(36).slice(2)}${path.extname(ext)}`, content);
    const r = await svc(w.args(f));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.startsWith(`svc: ${message}`)).toBe(true);
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(await w.count()).toBe(0);
  });

  it('keeps an unstorable row out of the chunk of good rows before it', async () => {
    const w = await world();
    const r = await svc(w.args(file('nul-late.ndjson', `${ndjson(999)}{"data":{"x":"\\u0000"}}\n`), '--json'));
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr).error.message).toMatch(/^line 1000: data → x: /);
    expect(await w.count()).toBe(0);
  });
});

describe('svc items import: tenants, queues and usage', () => {
  it('answers an unknown tenant, an unknown queue and another tenant\'s queue with exit code 3, adding nothing', async () => {
    const w = await world();
    const other = await world();
    const f = file('ok.ndjson', ndjson(2));
    const noTenant = await svc(['items', 'import', '--tenant', 'no-such-tenant', '--queue', w.queue.name, f]);
    expect(noTenant.code).toBe(3);
    expect(noTenant.stderr).toBe('svc: Tenant no encontrado: no-such-tenant\n');
    const noQueue = await svc(['items', 'import', '--tenant', w.tenant.name, '--queue', 'no-such-queue', f, '--json']);
    expect(noQueue.code).toBe(3);
    expect(JSON.parse(noQueue.stderr)).toEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Cola no encontrada' } });
    const foreign = await svc(['items', 'import', '--tenant', w.tenant.name, '--queue', other.queue.name, f]);
    expect(foreign.code).toBe(3);
    expect(foreign.stderr).toBe('svc: Cola no encontrada\n');
    expect([await w.count(), await other.count()]).toEqual([0, 0]);
  });

  it('refuses a deactivated queue like a missing one', async () => {
    const w = await world();
    await s.sql`update queues set is_active = false where id = ${w.queue.id}`;
    const r = await svc(w.args(file('inactive.ndjson', ndjson(1))));
    expect(r.code).toBe(3);
    expect(await w.count()).toBe(0);
  });

  it('refuses usage mistakes with exit code 2 and a missing file with 3', async () => {
    const w = await world();
    const f = file('u.ndjson', ndjson(1));
    const cases: Array<[string[], number, RegExp]> = [
      [w.args(file('u.txt', 'x')), 2, /cannot tell the format of .*u\.txt/],
      [w.args(f, '--format', 'xml'), 2, /--format must be csv or ndjson/],
      [w.args(f, '--chunk-size', '1001'), 2, /--chunk-size must be a whole number from 1 to 1000/],
      [w.args(f, '--chunk-size', '0'), 2, /--chunk-size/],
      [w.args(f, '--chunk-size', 'many'), 2, /--chunk-size/],
      [['items', 'import', '--queue', w.queue.name, f], 2, /--tenant is required/],
      [['items', 'import', '--tenant', w.tenant.name, f], 2, /--queue is required/],
      [['items', 'import', '--tenant', w.tenant.name, '--queue', w.queue.name], 2, /missing file to import/],
      [['items', 'frobnicate'], 2, /unknown items command "frobnicate"/],
      [w.args(path.join(tmp, 'absent.ndjson')), 3, /cannot read .*absent\.ndjson: no such file/],
      [w.args(tmp, '--format', 'csv'), 2, /is a directory/],
    ];
    for (const [args, code, message] of cases) {
      const r = await svc(args);
      expect({ args, code: r.code }).toEqual({ args, code });
      expect(r.stderr).toMatch(message);
    }
    expect(await w.count()).toBe(0);
    const help = await svc(['items', 'import', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('svc items import --tenant');
    expect((await svc(['items', '--help'])).stdout).toMatch(/import\s+add a CSV or NDJSON file/);
  });

  it('draws a progress bar with the rate and the time left on a terminal', async () => {
    const w = await world();
    const term = Object.assign(new PassThrough(), {
      isTTY: true, columns: 120, cursorTo: () => true, clearLine: () => true, moveCursor: () => true,
    });
    let drawn = '';
    term.on('data', (d) => (drawn += d));
    const r = await svc(w.args(file('bar.ndjson', ndjson(1200))), { progressTerminal: term as unknown as NodeJS.WriteStream });
    expect(r.code).toBe(0);
    expect(drawn).toMatch(/importing \[[^\]]*\] \d+% \| \d+ items \| \d+ items\/s \| \S+ left/);
    expect(r.stdout).toMatch(/1200 items added/);
    // no bar with --json: its lines are for scripts
    drawn = '';
    const j = await svc(w.args(file('bar.ndjson', ndjson(1200)), '--json'), { progressTerminal: term as unknown as NodeJS.WriteStream });
    expect(j.code).toBe(0);
    expect(drawn).toBe('');
  });
});
