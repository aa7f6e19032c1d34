import { useMemo, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Chart, Sparkline, type ChartLine } from '../components/Chart';
import { ErrorState, Loading } from '../components/States';
import { t } from '../i18n';
import { formatCount, formatDuration } from '../lib/format';
import type { MachineSeries, QueueSeries, SeriesWindow } from '../lib/api';
import { useSession } from '../session-context';

const COLORS = {
  completed: '#1a7f37', failed: '#c62828', backlog: '#1f5fbf', inProgress: '#8a5a00', p50: '#1f5fbf', p95: '#6a1b9a', slots: '#555555',
};
/** the machines' lines, in turn (not the totals' blue and grey) */
const PALETTE = ['#1a7f37', '#8a5a00', '#6a1b9a', '#00796b', '#ad1457', '#c62828', '#5d4037'];

const count = (v: number) => formatCount(v, t.locale);
const duration = (v: number) => formatDuration(v, t.locale);
const clock = (iso: string) => new Intl.DateTimeFormat(t.locale, { hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
const dayClock = (iso: string) => new Intl.DateTimeFormat(t.locale, { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
const sum = (values: Array<number | null>) => values.reduce<number>((s, v) => s + (v ?? 0), 0);
const peak = (values: Array<number | null>) => values.reduce<number>((m, v) => Math.max(m, v ?? 0), 0);

/** The hour/day switch: two toggle buttons, the pressed one is the window shown. */
export function WindowSwitch({ value, onChange, label }: { value: SeriesWindow; onChange: (w: SeriesWindow) => void; label: string }) {
  return (
    <div className="window-switch" role="group" aria-label={label}>
      {(['hour', 'day'] as const).map((w) => (
        <button key={w} type="button" className={value === w ? undefined : 'secondary'} aria-pressed={value === w} onClick={() => onChange(w)}>
          {t.charts[w]}
        </button>
      ))}
    </div>
  );
}

function useQueueSeries(queueId: string, window: SeriesWindow, every: number) {
  const { api } = useSession();
  return useQuery({
    queryKey: ['queue-series', queueId, window],
    queryFn: () => api.request('getQueueSeries', { path: { queue_id: queueId }, query: { window } }),
    refetchInterval: every,
  });
}

/** A queue over the last hour or day: finished items, backlog and processing percentiles. */
export function QueueCharts({ queueId, every }: { queueId: string; every: number }) {
  const [window, setWindow] = useState<SeriesWindow>('hour');
  const series = useQueueSeries(queueId, window, every);
  return (
    <section aria-labelledby="charts-title" className="charts">
      <div className="title-row">
        <h2 id="charts-title">{t.charts.queueTitle} <span className="muted small">({t.charts[window]}, {window === 'hour' ? t.charts.perMinute : t.charts.perFiveMinutes})</span></h2>
        <WindowSwitch value={window} onChange={setWindow} label={t.charts.window} />
      </div>
      {series.isPending ? <Loading />
        : series.isError ? <ErrorState error={series.error} onRetry={() => void series.refetch()} />
        : <QueueChartSet data={series.data.data} />}
    </section>
  );
}

function QueueChartSet({ data }: { data: QueueSeries }) {
  const charts = useMemo(() => {
    const at = data.points.map((p) => p.at);
    const line = (key: string, label: string, color: string, values: Array<number | null>, dashed?: boolean, joined?: boolean): ChartLine => ({ key, label, color, values, dashed, joined });
    return {
      at,
      throughput: [
        line('completed', t.charts.completed, COLORS.completed, data.points.map((p) => p.completed)),
        line('failed', t.charts.failed, COLORS.failed, data.points.map((p) => p.failed)),
      ],
      backlog: [
        line('backlog', t.charts.pending, COLORS.backlog, data.points.map((p) => p.backlog), false, true),
        line('in_progress', t.charts.inProgress, COLORS.inProgress, data.points.map((p) => p.in_progress), false, true),
      ],
      processing: [
        line('p50_ms', t.charts.p50, COLORS.p50, data.points.map((p) => p.p50_ms)),
        line('p95_ms', t.charts.p95, COLORS.p95, data.points.map((p) => p.p95_ms), true),
      ],
    };
  }, [data]);
  const rowTime = data.window === 'hour' ? clock : dayClock;
  const latest = [...charts.backlog[0]!.values].reverse().find((v) => v !== null) ?? null;
  const p95 = peak(charts.processing[1]!.values);
  return (
    <div className="chart-grid" data-window={data.window}>
      <Chart name="throughput" title={t.charts.throughput} at={charts.at} lines={charts.throughput} formatValue={count} formatTime={clock} formatRowTime={rowTime}
        summary={t.charts.throughputSummary(count(sum(charts.throughput[0]!.values)), count(sum(charts.throughput[1]!.values)))} />
      <Chart name="backlog" title={t.charts.backlog} at={charts.at} lines={charts.backlog} formatValue={count} formatTime={clock} formatRowTime={rowTime}
        summary={t.charts.backlogSummary(count(peak(charts.backlog[0]!.values)), latest === null ? t.common.none : count(latest))} />
      <Chart name="processing" title={t.charts.processing} at={charts.at} lines={charts.processing} formatValue={duration} formatTime={clock} formatRowTime={rowTime}
        summary={t.charts.processingSummary(p95 ? duration(p95) : t.common.none)} />
    </div>
  );
}

/** The overview card's line: items completed per minute over the last hour. */
export function QueueSparkline({ queueId, name, every }: { queueId: string; name: string; every: number }) {
  const series = useQueueSeries(queueId, 'hour', every);
  const line = useMemo<ChartLine | null>(() => series.data
    ? { key: 'completed', label: t.charts.completed, color: COLORS.completed, values: series.data.data.points.map((p) => p.completed) }
    : null, [series.data]);
  if (!series.data || !line) return null;
  const at = series.data.data.points.map((p) => p.at);
  return <Sparkline name={name} at={at} line={line} formatValue={count} formatTime={clock} label={t.charts.sparkline(name, count(sum(line.values)), count(peak(line.values)))} />;
}

/** Busy slots of the workspace's machines over the last hour or day. */
export function MachineCharts({ every }: { every: number }) {
  const { api } = useSession();
  const [window, setWindow] = useState<SeriesWindow>('hour');
  const series = useQuery({
    queryKey: ['machine-series', window],
    queryFn: () => api.request('getMachineSeries', { query: { window } }),
    refetchInterval: every,
  });
  return (
    <section aria-labelledby="machine-charts-title" className="charts">
      <div className="title-row">
        <h2 id="machine-charts-title">{t.machines.chartsTitle} <span className="muted small">({t.charts[window]}, {window === 'hour' ? t.charts.perMinute : t.charts.perFiveMinutes})</span></h2>
        <WindowSwitch value={window} onChange={setWindow} label={t.charts.window} />
      </div>
      {series.isPending ? <Loading />
        : series.isError ? <ErrorState error={series.error} onRetry={() => void series.refetch()} />
        : <MachineChart data={series.data.data} />}
    </section>
  );
}

function MachineChart({ data }: { data: MachineSeries }) {
  const lines = useMemo<ChartLine[]>(() => [
    { key: 'busy', label: t.machines.busyTotal, color: COLORS.backlog, values: data.total.map((p) => p.busy), joined: true },
    { key: 'slots', label: t.machines.slotsTotal, color: COLORS.slots, values: data.total.map((p) => p.slots), dashed: true, joined: true },
    ...data.machines.map((m, i) => ({ key: `machine-${m.name}`, label: t.machines.busyOf(m.name), color: PALETTE[i % PALETTE.length]!, values: m.points.map((p) => p.busy), joined: true })),
  ], [data]);
  const at = useMemo(() => data.total.map((p) => p.at), [data]);
  return (
    <Chart name="busy" title={t.machines.chartBusy} at={at} lines={lines} formatValue={count} formatTime={clock}
      formatRowTime={data.window === 'hour' ? clock : dayClock}
      summary={t.charts.busySummary(count(peak(lines[0]!.values)), count(peak(lines[1]!.values)))} />
  );
}
