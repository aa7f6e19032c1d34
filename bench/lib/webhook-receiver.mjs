// A webhook receiver for B3 with a subscription: answers 200 at once and notes, per event, when
// it arrived and when its change happened (`occurred_at`), for the delivery rate and delay.
import http from 'node:http';
import { percentile, round } from './scenario.mjs';

export async function startWebhookReceiver() {
  const arrivals = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      try {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        arrivals.push({ at, occurredAt: Date.parse(event.occurred_at), type: event.type, id: event.id });
      } catch { /* not an event: still answered, not counted */ }
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    arrivals,
    /** Events of `type` received, their rate from the first change to the last arrival, and the delays. */
    summary(type) {
      const got = arrivals.filter((a) => a.type === type);
      if (!got.length) return { received: 0, distinct: 0, perSec: null, delayMs: { p50: null, p99: null } };
      const delays = got.map((a) => a.at - a.occurredAt);
      const first = Math.min(...got.map((a) => a.occurredAt));
      const last = Math.max(...got.map((a) => a.at));
      return {
        received: got.length,
        distinct: new Set(got.map((a) => a.id)).size,
        perSec: round(got.length / Math.max(0.001, (last - first) / 1000), 0),
        delayMs: { p50: percentile(delays, 50), p99: percentile(delays, 99) },
      };
    },
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
