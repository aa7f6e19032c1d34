import { spawn } from 'node:child_process';
import path from 'node:path';

/** Runs a script with the compiled core as `core`; resolves its exit code and stdout. */
function runWithCore(script: string, onLine?: (line: string, kill: () => void) => void): Promise<{ code: number | null; lines: string[] }> {
  const core = path.resolve(__dirname, '..', 'dist', 'index.js');
  const child = spawn(process.execPath, ['-e', `const core = require(${JSON.stringify(core)});\n${script}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let rest = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const l of parts) {
      lines.push(l);
      onLine?.(l, () => child.kill('SIGKILL'));
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, lines })));
}

describe('the logger', () => {
  it('writes every line, in order, when the process exits in the same turn it logged them', async () => {
    const { code, lines } = await runWithCore(`
      const log = core.createLogger({ service: 't' });
      for (let i = 0; i < 3000; i++) log.info('line', { i });
      process.exit(0);`);
    expect(code).toBe(0);
    expect(lines.map((l) => JSON.parse(l).i)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', message: 'line', service: 't' });
  });

  it('writes what was logged before an uncaught exception ends the process', async () => {
    const { code, lines } = await runWithCore(`
      const log = core.createLogger({ service: 't' });
      log.error('about to fail', { n: 1 });
      throw new Error('boom');`);
    expect(code).toBe(1);
    expect(lines.map((l) => JSON.parse(l).message)).toEqual(['about to fail']);
  });

  it('writes a line before the process next waits, not at exit', async () => {
    // the child logs, then waits a minute; the line must arrive meanwhile (then it is killed)
    const { code, lines } = await runWithCore(`
      const log = core.createLogger({ service: 't' });
      log.warn('waiting');
      setTimeout(() => log.info('never'), 60_000);`, (_line, kill) => kill());
    expect(code).toBeNull();
    expect(lines.map((l) => JSON.parse(l).message)).toEqual(['waiting']);
  });
});

describe('the logger’s JSON', () => {
  it('writes what plain JSON cannot (BigInt, a cycle) through winston’s careful encoder', async () => {
    const { code, lines } = await runWithCore(`
      const log = core.createLogger({ service: 't' });
      const cyclic = { name: 'c' };
      cyclic.self = cyclic;
      log.info('big', { n: 12345678901234567890n });
      log.info('cycle', { cyclic });
      log.info('plain', { ok: true });`);
    expect(code).toBe(0);
    const [big, cycle, plain] = lines.map((l) => JSON.parse(l));
    expect(big).toMatchObject({ message: 'big', n: '12345678901234567890' });
    expect(cycle).toMatchObject({ message: 'cycle', cyclic: { name: 'c', self: '[Circular]' } });
    expect(plain).toMatchObject({ message: 'plain', ok: true, service: 't', level: 'info' });
    expect(typeof plain.timestamp).toBe('string');
  });
});
