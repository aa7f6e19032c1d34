import { LOG_APPEND_MAX_BYTES } from '@svc/core';
import { JobLog, splitForAppend } from '../src/run-job';

/** The agent's side of job logs (docs/decisions/job-logs.md): what it sends, in what pieces. */
describe('the agent\'s job log', () => {
  it('sends each line once, in numbered appends', () => {
    const log = new JobLog();
    expect(log.take()).toEqual([]);
    log.line('uno');
    log.line('dos ñ');
    const first = log.take();
    expect(first).toHaveLength(1);
    expect(first[0]!.seq).toBe(1);
    expect(first[0]!.text).toMatch(/^\S+Z uno\n\S+Z dos ñ\n$/);
    expect(log.take()).toEqual([]);
    log.line('tres');
    expect(log.take().map((a) => a.seq)).toEqual([2]);
  });

  it('splits long output at line ends into pieces the engine accepts, losing nothing', () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `línea ${i} ${'€'.repeat(20)}\n`);
    const text = lines.join('');
    const pieces = splitForAppend(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces) {
      expect(Buffer.byteLength(p)).toBeLessThanOrEqual(LOG_APPEND_MAX_BYTES);
      expect(p.endsWith('\n')).toBe(true);
    }
    expect(pieces.join('')).toBe(text);
  });

  it('cuts a single line longer than one append, so every piece still fits', () => {
    const huge = `${'€'.repeat(LOG_APPEND_MAX_BYTES)}\n`;
    const pieces = splitForAppend(`antes\n${huge}después\n`);
    for (const p of pieces) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(LOG_APPEND_MAX_BYTES);
    const joined = pieces.join('');
    expect(joined.startsWith('antes\n€€€')).toBe(true);
    expect(joined.endsWith('€\ndespués\n')).toBe(true);
    expect(Buffer.byteLength(joined)).toBeLessThan(Buffer.byteLength(huge));
  });
});
