import { counter, gauge } from './registry';

/** What the connections' gauge reads of an API process's hub of robot connections (apps/api/src/agent/hub.ts). */
interface HubCounts {
  readonly size: number;
  readonly reading: number;
  readonly paused: number;
}

/** The hubs of this process (one in production; tests serve several). */
const hubs = new Set<HubCounts>();

gauge<'state'>({
  name: 'svc_agent_connections',
  help: "Robots' connections to this API process: open, reading their machine's queue (reading), and not read because their robot leaves its replies unread (paused).",
  labelNames: ['state'],
  collect() {
    let open = 0;
    let reading = 0;
    let paused = 0;
    for (const h of hubs) {
      open += h.size;
      reading += h.reading;
      paused += h.paused;
    }
    this.set({ state: 'open' }, open);
    this.set({ state: 'reading' }, reading);
    this.set({ state: 'paused' }, paused);
  },
});

/**
 * Why the API ended a robot's connection on its own: `silent` (nothing, not even a pong, since
 * the previous ping: a network that went quiet), `unread` (replies left unread past the bound),
 * `flood` (messages far past the rate), `credential` (key rotated or machine deactivated),
 * `replaced` (the machine connected again, here or on another replica). A rising `silent` is the
 * robots' networks dropping connections without closing them.
 */
export type AgentCutReason = 'silent' | 'unread' | 'flood' | 'credential' | 'replaced';

const cuts = counter<'reason'>({
  name: 'svc_agent_connections_cut_total',
  help: "Robots' connections the API ended on its own, by reason: silent, unread, flood, credential, replaced.",
  labelNames: ['reason'],
});

export function countAgentCut(reason: AgentCutReason): void {
  cuts.inc({ reason });
}

/** Counts the hub's connections in the gauge until the returned function is called. */
export function trackAgentHub(hub: HubCounts): () => void {
  hubs.add(hub);
  return () => void hubs.delete(hub);
}
