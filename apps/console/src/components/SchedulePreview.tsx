import { useQuery } from '@tanstack/react-query';
import { ErrorState, Loading } from './States';
import { t } from '../i18n';
import { browserTimeZone, formatRuns } from '../lib/admin';
import type { Schedule } from '../lib/api';
import { useSession } from '../session-context';

const COUNT = 5;

/** A saved schedule's next runs, computed by the API (croner, in the schedule's zone), shown in the browser's zone. */
export function SchedulePreview({ schedule }: { schedule: Schedule }) {
  const { api } = useSession();
  const preview = useQuery({
    // the cron and the zone are part of the key: an edit shows the new expression's runs
    queryKey: ['schedule-preview', schedule.id, schedule.cron, schedule.timezone],
    queryFn: () => api.request('previewSchedule', { path: { id: schedule.id }, query: { count: COUNT } }),
  });
  return (
    <section className="preview" aria-labelledby={`preview-${schedule.id}`} data-preview={schedule.name}>
      <h3 id={`preview-${schedule.id}`}>{t.schedules.previewOf(schedule.name)}</h3>
      <p className="muted small"><code>{schedule.cron}</code> · {schedule.timezone} · {t.schedules.previewZone(browserTimeZone())}</p>
      {preview.isPending ? <Loading />
        : preview.isError ? <ErrorState error={preview.error} onRetry={() => void preview.refetch()} />
        : preview.data.data.runs.length === 0 ? <p className="muted">{t.schedules.previewNone}</p>
        : (
          <ol className="runs">
            {formatRuns(preview.data.data.runs, t.locale).map((text, i) => (
              <li key={preview.data.data.runs[i]}><time dateTime={preview.data.data.runs[i]}>{text}</time></li>
            ))}
          </ol>
        )}
    </section>
  );
}
