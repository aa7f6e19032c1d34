import { seedMachine, seedQueue, seedUser } from '@svc/testing';
import { formatCount, formatDuration } from '../src/lib/format';
import { base, memberEmail, page, seriousViolations, shot, signIn, t, tenantId, useConsoleBrowser, waitUntil } from './browser-harness';

/**
 * The charts (docs/decisions/console.md, charts): drawn on a canvas, and their text alternative
 * shows the numbers the series routes answer for the same minutes, read by a member.
 */
jest.setTimeout(120_000);

useConsoleBrowser('charts.test');
let token: string;
let queueId: string;
const QUEUE = 'facturas-graficos';

beforeAll(async () => {
  token = (await seedUser(t.sql, tenantId, { role: 'member' })).token;
  queueId = (await seedQueue(t.sql, tenantId, { name: QUEUE })).id as string;
  const [{ now }] = await t.sql`select date_trunc('minute', now()) as now` as unknown as [{ now: Date }];
  const minus = (m: number) => new Date(now.getTime() - m * 60_000);
  // past minutes: buckets, a histogram and backlog samples as the trigger and the dispatcher write them
  for (const [ago, completed, failed] of [[3, 5, 1], [12, 8, 0], [40, 2, 3]] as const) {
    await t.sql`insert into queue_item_minutes (queue_id, minute, shard, completed, failed, processing_ms, timed)
                values (${queueId}, ${minus(ago)}, 0, ${completed}, ${failed}, 0, 0)`;
    await t.sql`insert into queue_minute_samples (queue_id, minute, backlog, in_progress) values (${queueId}, ${minus(ago)}, ${ago * 2}, 1)`;
  }
  await t.sql`insert into queue_item_minute_times (queue_id, minute, shard, bucket, n) values (${queueId}, ${minus(3)}, 0, 40, 4), (${queueId}, ${minus(3)}, 0, 52, 1)`;
  // and now: items completed through the real trigger, waiting items and a busy machine, sampled
  const ids = (await t.sql`insert into queue_item_records (tenant_id, queue_id, data) select ${tenantId}, ${queueId}, '{}' from generate_series(1, 6) returning id`)
    .map((r) => r.id as string);
  await t.sql`update queue_items set status = 'in_progress', started_at = now() - interval '5 seconds' where id = any(${ids.slice(0, 2)}::uuid[])`;
  await t.sql`update queue_items set status = 'completed', processed_at = started_at + interval '1500 milliseconds' where id = any(${ids.slice(0, 2)}::uuid[])`;
  const machine = (await seedMachine(t.sql, tenantId, { name: 'robot-graficos' })).row;
  await t.sql`update machines set slots = 3, running_jobs = 2 where id = ${machine.id}`;
  await t.sql`delete from stat_sample_minutes where minute = date_trunc('minute', now())`;
  await t.deps.engine.sweeps.sampleMinute();
});

type Row = { at: string; [series: string]: number | null | string };

/** Every row of the series the page shows and the API answers, compared cell by cell; returns how many rows were compared. */
async function compareTable(chart: string, points: Row[], columns: Record<string, (v: number) => string>): Promise<number> {
  const shown = (await page.evaluate(`(() => [...document.querySelectorAll('[data-chart="${chart}"] tr[data-at]')].map((tr) => ({
    at: tr.getAttribute('data-at'),
    cells: Object.fromEntries([...tr.querySelectorAll('td[data-series]')].map((td) => [td.getAttribute('data-series'), td.textContent.trim()])),
  })))()`)) as Array<{ at: string; cells: Record<string, string> }>;
  const byAt = new Map(shown.map((r) => [r.at, r.cells]));
  let compared = 0;
  for (const p of points) {
    const cells = byAt.get(p.at);
    if (!cells) continue; // a minute turned between the two reads: the window moved by one
    for (const [key, format] of Object.entries(columns)) {
      const v = p[key] as number | null | undefined;
      expect([chart, p.at, key, cells[key]]).toEqual([chart, p.at, key, v === null || v === undefined ? 'sin muestra' : format(v)]);
    }
    compared++;
  }
  return compared;
}

const count = (v: number) => formatCount(v, 'es');
const duration = (v: number) => formatDuration(v, 'es');
const api = async (url: string) => {
  const res = await t.http.get(url).set({ Authorization: `Bearer ${token}` });
  expect(res.status).toBe(200);
  return res.body.data;
};
const canvasIn = (selector: string) => `!!document.querySelector('${selector} canvas')`;

describe('charts in the console', () => {
  it('draws a sparkline per queue on the overview, a member\'s', async () => {
    await signIn(memberEmail);
    await waitUntil(canvasIn(`[data-sparkline="${QUEUE}"]`));
    const label = await page.locator(`[data-sparkline="${QUEUE}"] figcaption`).textContent();
    const series = await api(`/api/v1/settings/queues/${queueId}/series`);
    const completed = (series.points as Row[]).reduce((s, p) => s + Number(p.completed ?? 0), 0);
    expect(label).toContain(`${count(completed)} completados`);
    expect(await seriousViolations()).toEqual([]);
    await shot('charts-overview');
  });

  it('shows a queue\'s charts by hour and by day with the numbers of the series route', async () => {
    await signIn(memberEmail);
    await page.goto(`${base}/console/queues/${queueId}`);
    for (const chart of ['throughput', 'backlog', 'processing']) await waitUntil(canvasIn(`[data-chart="${chart}"]`));
    const hour = await api(`/api/v1/settings/queues/${queueId}/series?window=hour`);
    const compared = await compareTable('throughput', hour.points, { completed: count, failed: count });
    expect(compared).toBeGreaterThanOrEqual(59);
    await compareTable('backlog', hour.points, { backlog: count, in_progress: count });
    await compareTable('processing', hour.points, { p50_ms: duration, p95_ms: duration });
    // what was written shows: the seeded minutes and the items completed now
    expect((hour.points as Row[]).filter((p) => Number(p.completed ?? 0) > 0).length).toBe(4);
    expect((hour.points as Row[]).some((p) => p.p50_ms !== null)).toBe(true);
    expect(await seriousViolations()).toEqual([]);
    await page.locator('[data-chart="throughput"] summary').click();
    await shot('charts-queue-hour');

    await page.getByRole('button', { name: 'Último día' }).click();
    await waitUntil(`!!document.querySelector('[data-window="day"] [data-chart="throughput"] canvas')`);
    const day = await api(`/api/v1/settings/queues/${queueId}/series?window=day`);
    expect(await compareTable('throughput', day.points, { completed: count, failed: count })).toBeGreaterThanOrEqual(287);
    await compareTable('backlog', day.points, { backlog: count, in_progress: count });
    expect(await page.getByRole('button', { name: 'Último día' }).getAttribute('aria-pressed')).toBe('true');
    expect(await seriousViolations()).toEqual([]);
    await shot('charts-queue-day');
  });

  it('shows the machines\' busy slots with the numbers of the series route', async () => {
    await signIn(memberEmail);
    await page.goto(`${base}/console/machines`);
    await waitUntil(canvasIn('[data-chart="busy"]'));
    const series = await api('/api/v1/settings/machines/series');
    const machine = series.machines.find((m: { name: string }) => m.name === 'robot-graficos');
    const rows = (series.total as Row[]).map((p, i) => ({ ...p, 'machine-robot-graficos': machine.points[i].busy }));
    expect(await compareTable('busy', rows, { busy: count, slots: count, 'machine-robot-graficos': count })).toBeGreaterThanOrEqual(59);
    expect((series.total as Row[]).some((p) => p.busy === 2 && p.slots === 3)).toBe(true);
    expect(await seriousViolations()).toEqual([]);
    await shot('charts-machines');
  });
});
