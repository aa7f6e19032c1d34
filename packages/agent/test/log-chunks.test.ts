import { LOG_APPEND_MAX_BYTES } from '@svc/core/internals';
import { LOG_CHUNK_BYTES, logChunks } from '../src/run';

/** A run's log as the SDK sends it (docs/decisions/job-logs.md): pieces the platform accepts. */
describe('the robot SDK\'s log chunks', () => {
  it('uses the platform\'s own bound of one append', () => {
    expect(LOG_CHUNK_BYTES).toBe(LOG_APPEND_MAX_BYTES);
  });

  it('sends short text as it is, and nothing for no text', () => {
    expect(logChunks('')).toEqual([]);
    expect(logChunks('uno\ndos ñ\n')).toEqual(['uno\ndos ñ\n']);
  });

  it('splits long output at line ends into pieces the engine accepts, losing nothing', () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `línea ${i} ${'€'.repeat(20)}\n`);
    const text = lines.join('');
    const pieces = logChunks(text);
    expect(pieces.length).toBeGreaterThan(1);
    for (const p of pieces) {
      expect(Buffer.byteLength(p)).toBeLessThanOrEqual(LOG_APPEND_MAX_BYTES);
      expect(p.endsWith('\n')).toBe(true);
    }
    expect(pieces.join('')).toBe(text);
  });

  it('cuts a single line longer than one append, so every piece still fits', () => {
    const huge = `${'€'.repeat(LOG_APPEND_MAX_BYTES)}\n`;
    const pieces = logChunks(`antes\n${huge}después\n`);
    for (const p of pieces) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(LOG_APPEND_MAX_BYTES);
    const joined = pieces.join('');
    expect(joined.startsWith('antes\n€€€')).toBe(true);
    expect(joined.endsWith('€\ndespués\n')).toBe(true);
    expect(Buffer.byteLength(joined)).toBeLessThan(Buffer.byteLength(huge));
  });
});
