import { closeSync, openSync, writeSync } from 'node:fs';

/**
 * An optional append-only record of what this agent process did, one JSON line per event,
 * written synchronously so it survives a SIGKILL: fault tests read it to prove that no item was
 * processed by two machines at the same time.
 */
export type JournalEvent =
  /**
   * `outcome: 'aborted'` on a job-end: the run was lost and stopped there and then; `exception` on
   * a job-end the platform recorded `failed`: the kind of failure the robot reported
   */
  | { event: 'job-start' | 'job-end'; job_id: string; machine_id: string; attempt: number; status?: string; outcome?: string; exception?: 'business' | 'application' }
  /** a job asked a person for input, and got the answer (docs/decisions/human-input.md) */
  | { event: 'input-asked' | 'input-answered'; job_id: string; machine_id: string; attempt: number }
  /** `exception` on an item-end with outcome `failed`: the kind of failure the robot reported */
  | { event: 'item-start' | 'item-end'; item_id: string; job_id: string; machine_id: string; attempt: number; outcome?: string; exception?: 'business' | 'application' };

export class Journal {
  private fd: number | null;

  constructor(path?: string) {
    this.fd = path ? openSync(path, 'a') : null;
  }

  get enabled(): boolean {
    return this.fd !== null;
  }

  write(e: JournalEvent): void {
    if (this.fd === null) return;
    writeSync(this.fd, JSON.stringify({ t: Date.now(), pid: process.pid, ...e }) + '\n');
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
