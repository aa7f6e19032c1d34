import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/*
 * The one module that imports uPlot, loaded by a dynamic import the first time a chart is drawn:
 * pages without charts (sign-in, lists) never download it (docs/decisions/console.md, charts).
 */

export interface PlotLine {
  label: string;
  values: Array<number | null>;
  color: string;
  /** drawn dashed, for a reference (a capacity, a slower percentile) */
  dashed?: boolean;
  /** a sampled quantity (a level, not a count per bucket): a missing sample is bridged, not a drop to nothing */
  joined?: boolean;
}

export interface PlotSpec {
  /** bucket starts, in seconds since the epoch */
  x: number[];
  lines: PlotLine[];
  height: number;
  /** no axes, legend nor cursor: a sparkline */
  bare?: boolean;
  /** how the y axis and the legend write a value */
  formatValue: (v: number) => string;
  formatTime: (seconds: number) => string;
  /** the legend's name of the time */
  timeLabel: string;
}

export interface Plot {
  update(spec: PlotSpec): void;
  destroy(): void;
}

function optionsOf(spec: PlotSpec, width: number): uPlot.Options {
  const value = (_u: uPlot, v: number | null) => (v === null || v === undefined ? '—' : spec.formatValue(v));
  return {
    width,
    height: spec.height,
    legend: { show: !spec.bare },
    cursor: spec.bare ? { show: false } : { points: { size: 6 } },
    scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min ?? 0), Math.max(1, max ?? 1)] } },
    axes: spec.bare
      ? [{ show: false }, { show: false }]
      : [
          { values: (_u, splits) => splits.map((s) => spec.formatTime(s)) },
          { values: (_u, splits) => splits.map((s) => spec.formatValue(s)), size: 70 },
        ],
    series: [
      { label: spec.timeLabel, value: (_u, v) => (v === null || v === undefined ? '—' : spec.formatTime(v)) },
      ...spec.lines.map((l) => ({
        label: l.label,
        stroke: l.color,
        width: spec.bare ? 1.5 : 2,
        dash: l.dashed ? [6, 4] : undefined,
        spanGaps: !!l.joined,
        // a lone value between gaps would draw nothing without its point
        points: spec.bare ? { show: false } : { size: 4 },
        value,
      })),
    ],
  };
}

function dataOf(spec: PlotSpec): uPlot.AlignedData {
  return [spec.x, ...spec.lines.map((l) => l.values)] as uPlot.AlignedData;
}

/** Draws into `el` at its width, and follows its width as the page resizes. */
export function drawPlot(el: HTMLElement, spec: PlotSpec): Plot {
  let current = spec;
  let plot = new uPlot(optionsOf(spec, Math.max(120, el.clientWidth)), dataOf(spec), el);
  const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(120, el.clientWidth), height: current.height }));
  resize.observe(el);
  return {
    update(next) {
      // the same lines: new data in place; other lines (a machine came or went): a new plot
      if (next.lines.length === current.lines.length && next.lines.every((l, i) => l.label === current.lines[i]!.label)) {
        current = next;
        plot.setData(dataOf(next));
      } else {
        current = next;
        plot.destroy();
        plot = new uPlot(optionsOf(next, Math.max(120, el.clientWidth)), dataOf(next), el);
      }
    },
    destroy() {
      resize.disconnect();
      plot.destroy();
    },
  };
}
