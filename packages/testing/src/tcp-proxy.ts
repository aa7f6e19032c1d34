import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay in front of a port, standing for the network between a robot and the platform:
 * - `cut()` drops every open connection (both ends see it close) and refuses new ones until
 *   `restore()`: a network that goes away with a reset;
 * - `hold()` lets nothing through either way and closes nothing, for connections open and new
 *   (a new one is accepted but reaches nothing): a Wi-Fi, VPN or NAT gone silent. `release()`
 *   heals it: what was held is delivered in order, a close that happened meanwhile included.
 */
export interface TcpProxy {
  url: string;
  cut(): void;
  restore(): void;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

/** One relayed connection: the robot's side, the platform's (opened once the network lets it). */
interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
  /** held while the network is silent: bytes each way, and whether each side closed */
  toUpstream: Buffer[];
  toClient: Buffer[];
  clientClosed: boolean;
  upstreamClosed: boolean;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const links = new Set<Link>();
  let down = false;
  let held = false;

  const destroy = (link: Link) => {
    link.client.destroy();
    link.upstream?.destroy();
    links.delete(link);
  };

  /** Delivers what the link holds; a side that closed meanwhile closes the other now. */
  const flush = (link: Link) => {
    if (!link.upstream && !link.clientClosed) connectUpstream(link);
    for (const chunk of link.toUpstream.splice(0)) link.upstream?.write(chunk);
    for (const chunk of link.toClient.splice(0)) link.client.write(chunk);
    if (link.clientClosed || link.upstreamClosed) {
      // the held bytes go out first, then the close
      links.delete(link);
      for (const s of [link.client, link.upstream]) s?.end(() => s.destroy());
    }
  };

  const connectUpstream = (link: Link) => {
    const upstream = net.connect(targetPort, targetHost);
    link.upstream = upstream;
    upstream.on('data', (chunk: Buffer) => {
      if (held) link.toClient.push(chunk);
      else link.client.write(chunk);
    });
    const closed = () => {
      link.upstreamClosed = true;
      if (!held) destroy(link);
    };
    upstream.on('error', closed).on('close', closed);
  };

  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const link: Link = { client, upstream: null, toUpstream: [], toClient: [], clientClosed: false, upstreamClosed: false };
    links.add(link);
    client.on('data', (chunk: Buffer) => {
      if (held || !link.upstream) link.toUpstream.push(chunk);
      else link.upstream.write(chunk);
    });
    const closed = () => {
      link.clientClosed = true;
      if (!held) destroy(link);
    };
    client.on('error', closed).on('close', closed);
    if (!held) connectUpstream(link);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const cut = () => {
    down = true;
    held = false;
    for (const link of [...links]) destroy(link);
  };
  return {
    url: `http://127.0.0.1:${port}`,
    cut,
    restore() {
      down = false;
    },
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const link of [...links]) flush(link);
    },
    async close() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
