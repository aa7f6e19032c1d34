/**
 * BullMQ (and the Redis client under it), loaded when a process first uses a queue: the CLI and
 * other processes that dispatch nothing do not pay for loading it at start.
 */
let loaded: typeof import('bullmq') | null = null;

export function bullmq(): typeof import('bullmq') {
  loaded ??= require('bullmq') as typeof import('bullmq');
  return loaded;
}
