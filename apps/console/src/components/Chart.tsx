import { useEffect, useId, useRef, useState } from 'react';
import type { Plot, PlotSpec } from '../charts/plot';
import { t } from '../i18n';

type PlotModule = typeof import('../charts/plot');
let loading: Promise<PlotModule> | null = null;
/** uPlot arrives with the first chart drawn, once for the session (a chunk of its own). */
function loadPlot(): Promise<PlotModule> {
  loading ??= import('../charts/plot');
  return loading;
}

export interface ChartLine {
  /** stable name of the series, for tests and for keeping the plot when the data change */
  key: string;
  label: string;
  values: Array<number | null>;
  color: string;
  dashed?: boolean;
  /** a level sampled each minute (backlog, busy slots): the line bridges a missing sample */
  joined?: boolean;
}

interface PlotProps {
  at: string[];
  lines: ChartLine[];
  height: number;
  bare?: boolean;
  formatValue: (v: number) => string;
  formatTime: (iso: string) => string;
}

/** The canvas: hidden from assistive technology, which reads the text alternative beside it. */
function PlotArea({ at, lines, height, bare, formatValue, formatTime }: PlotProps) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<Plot | null>(null);
  const [mod, setMod] = useState<PlotModule | null>(null);
  useEffect(() => {
    let live = true;
    void loadPlot().then((m) => { if (live) setMod(() => m); });
    return () => { live = false; plot.current?.destroy(); plot.current = null; };
  }, []);
  useEffect(() => {
    if (!mod || !el.current) return;
    const spec: PlotSpec = {
      x: at.map((iso) => Date.parse(iso) / 1000),
      lines: lines.map(({ label, values, color, dashed, joined }) => ({ label, values, color, dashed, joined })),
      timeLabel: t.charts.time,
      height,
      bare,
      formatValue,
      formatTime: (s) => formatTime(new Date(s * 1000).toISOString()),
    };
    if (plot.current) plot.current.update(spec);
    else plot.current = mod.drawPlot(el.current, spec);
  }, [mod, at, lines, height, bare, formatValue, formatTime]);
  return <div ref={el} className={bare ? 'plot sparkline' : 'plot'} style={{ minHeight: height }} aria-hidden="true" data-plot-ready={mod ? 'true' : 'false'} />;
}

export interface ChartProps {
  /** what the chart shows, its caption */
  title: string;
  /** bucket starts, ISO */
  at: string[];
  lines: ChartLine[];
  formatValue: (v: number) => string;
  /** how the axis writes a moment; the table writes it with `formatRowTime` */
  formatTime: (iso: string) => string;
  formatRowTime: (iso: string) => string;
  /** one sentence of what the series say, read first */
  summary: string;
  height?: number;
  name: string;
}

/**
 * A chart for people who look, with the same numbers for people who read: a caption, a one-line
 * summary and, under a disclosure, the table of every bucket (charts alone are not accessible).
 */
export function Chart({ title, at, lines, formatValue, formatTime, formatRowTime, summary, height = 180, name }: ChartProps) {
  const captionId = useId();
  return (
    <figure className="chart" data-chart={name} aria-labelledby={captionId}>
      <figcaption id={captionId}>{title}</figcaption>
      <p className="small muted" data-chart-summary>{summary}</p>
      <PlotArea at={at} lines={lines} height={height} formatValue={formatValue} formatTime={formatTime} />
      <details>
        <summary>{t.charts.showData(title)}</summary>
        <div className="table-wrap">
          <table className="chart-data">
            <caption className="visually-hidden">{t.charts.tableCaption(title)}</caption>
            <thead>
              <tr>
                <th scope="col">{t.charts.time}</th>
                {lines.map((l) => <th scope="col" className="num" key={l.key}>{l.label}</th>)}
              </tr>
            </thead>
            <tbody>
              {at.map((iso, i) => (
                <tr key={iso} data-at={iso}>
                  <th scope="row"><time dateTime={iso}>{formatRowTime(iso)}</time></th>
                  {lines.map((l) => {
                    const v = l.values[i];
                    return <td className="num" key={l.key} data-series={l.key}>{v === null || v === undefined ? t.charts.noSample : formatValue(v)}</td>;
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

/** A small line without axes (the overview's cards); `label` says in words what it draws. */
export function Sparkline({ at, line, label, formatValue, formatTime, name }: {
  at: string[]; line: ChartLine; label: string; formatValue: (v: number) => string; formatTime: (iso: string) => string; name: string;
}) {
  return (
    <figure className="sparkline-figure" data-sparkline={name}>
      <PlotArea at={at} lines={[line]} height={36} bare formatValue={formatValue} formatTime={formatTime} />
      <figcaption className="small muted">{label}</figcaption>
    </figure>
  );
}
