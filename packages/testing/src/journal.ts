import { existsSync, readFileSync } from 'node:fs';

/** One line of an agent-sim journal (`--journal FILE`): what a machine did and when. */
export interface JournalEntry {
  t: number;
  pid: number;
  event: 'job-start' | 'job-end' | 'item-start' | 'item-end' | 'input-asked' | 'input-answered';
  job_id: string;
  machine_id: string;
  attempt: number;
  item_id?: string;
  outcome?: string;
  status?: string;
  /** on a failed item-end or job-end: the kind of failure the robot reported */
  exception?: 'business' | 'application';
}

export function readJournal(file: string): JournalEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as JournalEntry);
}

/**
 * From agents' journals: for every item, its processing intervals (start → end, or → the death
 * of its process when `deaths` says when a pid was killed). Throws when two intervals of one
 * item overlap, i.e. two machines (or two runs) processed it at the same time.
 */
export function assertNoItemProcessedTwiceAtOnce(entries: JournalEntry[], deaths: Record<number, number> = {}): number {
  const open = new Map<string, JournalEntry>();
  const intervals = new Map<string, Array<{ from: number; to: number; machine: string; attempt: number }>>();
  const push = (id: string, iv: { from: number; to: number; machine: string; attempt: number }) => {
    const list = intervals.get(id) ?? [];
    list.push(iv);
    intervals.set(id, list);
  };
  for (const e of [...entries].sort((a, b) => a.t - b.t)) {
    if (!e.item_id) continue;
    const k = `${e.item_id}/${e.pid}/${e.attempt}`;
    if (e.event === 'item-start') open.set(k, e);
    else if (e.event === 'item-end') {
      const s = open.get(k);
      open.delete(k);
      if (s) push(e.item_id, { from: s.t, to: e.t, machine: e.machine_id, attempt: e.attempt });
    }
  }
  for (const s of open.values()) push(s.item_id!, { from: s.t, to: deaths[s.pid] ?? Number.POSITIVE_INFINITY, machine: s.machine_id, attempt: s.attempt });
  for (const [id, list] of intervals) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) {
      if (list[i]!.from < list[i - 1]!.to) {
        throw new Error(`item ${id} processed twice at once: ${JSON.stringify(list[i - 1])} and ${JSON.stringify(list[i])}`);
      }
    }
  }
  return intervals.size;
}
