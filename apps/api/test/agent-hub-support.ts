import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ApiTestContext } from '@svc/testing/api';
import { createAgentHub, type AgentHub, type AgentHubOptions } from '../src/agent/hub';
import type { ApiDeps } from '../src/deps';

/** An agent hub serving a test's API on a port of its own, as robots reach it. */
export interface ServedHub {
  hub: AgentHub;
  /** the base URL robots are given (http://, or https:// with `tls`) */
  url: string;
  /** runs before the hub closes (a test's own clean-up that the close would wait for) */
  onClose(fn: () => void): void;
  close(): Promise<void>;
}

export async function serveHub(
  t: ApiTestContext,
  options: AgentHubOptions & { deps?: Partial<ApiDeps>; tls?: { key: string; cert: string } } = {},
): Promise<ServedHub> {
  const { deps, tls, ...hubOptions } = options;
  const hub = createAgentHub({ ...t.deps, ...deps }, hubOptions);
  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, t.app.callback()) : http.createServer(t.app.callback());
  hub.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cleanups: Array<() => void> = [];
  return {
    hub,
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    onClose: (fn) => void cleanups.push(fn),
    async close() {
      for (const fn of cleanups) fn();
      await hub.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
