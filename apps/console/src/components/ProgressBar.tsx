import { t } from '../i18n';
import { isLive, progressValue } from '../lib/jobs';

/** A job's progress: the robot's percent as a bar and a number (never the bar alone), indeterminate while it runs without one. */
export function ProgressBar({ job, label = t.jobs.progressLabel }: { job: { status: string; progress_percent: number | null; progress_message?: string | null }; label?: string }) {
  const value = progressValue(job);
  if (value === null && !isLive(job.status)) return <span className="muted">{t.common.none}</span>;
  return (
    <span className="progress">
      {value === null ? <progress aria-label={label} /> : <progress aria-label={label} max={100} value={value} />}
      <span className="small" data-progress={value ?? ''}>{value === null ? t.jobs.progressUnknown : t.jobs.percent(value)}</span>
    </span>
  );
}
