import type { JobRow } from '../jobs/repo';
import { jobDurationSeconds, jobsEnded, jobStopLatencySeconds, secondsBetween } from './domain';

/** Jobs that reached a final status (dispatch/job-end.ts): by status, run time, stop latency. */
export function observeJobsEnded(rows: readonly JobRow[]): void {
  for (const row of rows) {
    jobsEnded.inc({ status: row.status });
    const end = row.finished_at ?? new Date();
    if (row.started_at) jobDurationSeconds.observe({ status: row.status }, secondsBetween(row.started_at, end));
    if (row.status === 'stopped' && row.started_at && row.stop_requested_at) {
      jobStopLatencySeconds.observe(secondsBetween(row.stop_requested_at, end));
    }
  }
}
