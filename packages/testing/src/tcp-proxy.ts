import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay in front of a port, whose link can be cut: what a robot behind NAT sees when its
 * network goes away. `cut()` drops every open connection and refuses new ones until `restore()`.
 */
export interface TcpProxy {
  url: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const cut = () => {
    down = true;
    for (const s of open) s.destroy();
    open.clear();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    cut,
    restore() {
      down = false;
    },
    async close() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
