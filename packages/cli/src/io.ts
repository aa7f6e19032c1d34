import { CliError } from './errors';

/**
 * What a command may touch besides the database: its output streams and its environment. Passed
 * in (not read from `process`) so commands run the same inside tests and inside other programs.
 */
export interface CliIo {
  stdout: (text: string) => void;
  /** Standard output as a stream, for output too large to hold (an export): written with backpressure, never ended. */
  stdoutStream?: NodeJS.WritableStream;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  /** Reads all of standard input (for `--password-stdin`). */
  readStdin: () => Promise<string>;
  /** Standard input as a stream, for input too large to hold (`svc items import -`). */
  stdinStream?: () => AsyncIterable<Buffer>;
  /**
   * The terminal standard error is, when it is one: where a progress bar may be drawn. Absent
   * when stderr is a file or a pipe, so logs never fill with redrawn bars.
   */
  progressTerminal?: NodeJS.WriteStream;
  /**
   * Asks for a secret on the terminal without echoing it (the prompt goes to stderr, so stdout
   * stays the command's output). Absent when standard input is not a terminal: nobody to ask.
   */
  readSecret?: (prompt: string) => Promise<string>;
}

export function processIo(): CliIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stdoutStream: process.stdout,
    stderr: (text) => process.stderr.write(text),
    env: process.env,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    stdinStream: () => process.stdin,
    ...(process.stderr.isTTY ? { progressTerminal: process.stderr } : {}),
    ...(process.stdin.isTTY ? { readSecret: ttySecretReader(process.stdin, process.stderr) } : {}),
  };
}

/**
 * Reads one line from a terminal in raw mode, so the terminal does not echo it (no `*` either:
 * its length is a hint too). Backspace deletes; Enter ends; Ctrl-C and Ctrl-D on an empty line
 * cancel. Characters typed (or pasted) past an Enter are kept for the next question.
 */
export function ttySecretReader(input: NodeJS.ReadStream, prompts: NodeJS.WritableStream): (prompt: string) => Promise<string> {
  let pending = '';
  return (prompt) => new Promise<string>((resolve, reject) => {
    let value = '';
    // raw (no echo) before the prompt shows: whoever answers the prompt at once must not be echoed
    input.setRawMode(true);
    prompts.write(prompt);
    const finish = (err?: Error) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      prompts.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    // true when the line is complete (or cancelled)
    const take = (text: string): boolean => {
      for (let i = 0; i < text.length; i++) {
        const ch = text[i]!;
        if (ch === '\r' || ch === '\n') {
          pending = text.slice(i + 1).replace(/^\n/, '');
          finish();
          return true;
        }
        if (ch === '\u0003' || (ch === '\u0004' && value === '')) {
          pending = '';
          finish(new CliError('cancelled'));
          return true;
        }
        if (ch === '\u007f' || ch === '\b') value = Array.from(value).slice(0, -1).join('');
        else if (ch >= ' ') value += ch;
      }
      return false;
    };
    const onData = (chunk: Buffer | string) => void take(chunk.toString());
    const rest = pending;
    pending = '';
    if (take(rest)) return;
    input.on('data', onData);
    input.resume();
  });
}
