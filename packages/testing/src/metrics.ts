import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { waitFor } from './wait';

/** Fetches a Prometheus exposition (text), failing on anything but 200. */
export async function scrape(url: string, token?: string): Promise<string> {
  const res = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const body = await res.text();
  if (res.status !== 200) throw new Error(`scrape of ${url} answered ${res.status}: ${body.slice(0, 500)}`);
  return body;
}

/**
 * The value of one sample of an exposition: `name` with exactly these labels (a subset match
 * when `partial`), or undefined when there is none. Sums the samples that match when partial.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}, partial = false): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) found[l[1]!] = l[2]!.replace(/\\(.)/g, '$1');
    const wanted = Object.entries(labels);
    if (!wanted.every(([k, v]) => found[k] === v)) continue;
    if (!partial && Object.keys(found).length !== wanted.length) continue;
    total = (total ?? 0) + Number(m[4]);
  }
  return total;
}

/** The dispatcher's periodic passes (DISPATCH_SCHEDULERS). */
export type DispatcherPass = 'sweep' | 'consumers' | 'reconcile' | 'schedules' | 'purge-idempotency-keys' | 'bulk-actions' | 'retention' | 'claim-floor';

/**
 * Resolves once a dispatcher whose metrics are at `metricsUrls` has completed a `pass` that began
 * after this call: then whatever that pass would do about the state written before the call is
 * done, and a check that something did not happen means it. Passes may overlap, so completions
 * past the count of passes started at the call are what prove it. Each tick runs on one
 * dispatcher only: give every dispatcher's URL, the counts are summed.
 */
export async function passBegunAfter(metricsUrls: string | readonly string[], pass: DispatcherPass, timeoutMs = 30_000): Promise<void> {
  const urls = typeof metricsUrls === 'string' ? [metricsUrls] : metricsUrls;
  const total = async (name: string) => {
    let n = 0;
    for (const url of urls) n += sampleValue(await scrape(url), name, { pass }) ?? 0;
    return n;
  };
  // a dispatcher just started may not serve its metrics yet: its counters are read once it does
  const started = await waitFor('the dispatchers serving their metrics', () => total('svc_dispatcher_passes_started_total').then((n) => ({ n })), timeoutMs);
  await waitFor(`a ${pass} pass begun after ${started.n} had started`, async () =>
    (await total('svc_dispatcher_pass_seconds_count')) > started.n, timeoutMs, 50);
}

/** Every label value `label` takes in the samples of `name`. */
export function labelValues(text: string, name: string, label: string): string[] {
  const values = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const m = new RegExp(`[{,]${label}="((?:[^"\\\\]|\\\\.)*)"`).exec(line);
    if (m) values.add(m[1]!);
  }
  return [...values];
}

/** Where promtool is (Debian package `prometheus`), or null; PROMTOOL_PATH wins. */
export function findPromtool(): string | null {
  // shared with jest.config.js, which leaves the promtool tests out without one
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { findPromtool: find } = require(path.resolve(__dirname, '../../../scripts/promtool.cjs')) as { findPromtool: () => string | null };
  return find();
}

/** `promtool check metrics` (exposition read from stdin) or `check rules <file>`: status and output. */
export function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const bin = findPromtool();
  if (!bin || !existsSync(bin)) throw new Error('promtool is not installed (apt-get install -y prometheus)');
  const res = spawnSync(bin, args, { input, encoding: 'utf8' });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}
