import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { agentProtocolChecker } from './agent-protocol';

/**
 * A relay between robots and the platform that reads every message of the machine protocol on
 * its way, as docs/agent-protocol.schema.json describes it: each robot's request the platform
 * accepts, each result, error and push is checked against the committed document. A robot (of
 * either SDK) connects to `url` instead of the platform; what the document does not describe is
 * kept in `violations`, and `checked()` says what the robots' traffic covered.
 */
export interface ProtocolRelay {
  url: string;
  violations: string[];
  checked(): string[];
  close(): Promise<void>;
}

/** A close code one end may send on: 1005, 1006 and 1015 only describe a close, and ws refuses codes outside the ranges it may send. */
function sendable(code: number): number {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1000;
}

export async function startProtocolRelay(platform: string): Promise<ProtocolRelay> {
  const violations: string[] = [];
  const checkers: Array<ReturnType<typeof agentProtocolChecker>> = [];
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server });
  const target = platform.replace(/^http/, 'ws');
  wss.on('connection', (robot, req) => {
    const checker = agentProtocolChecker();
    checkers.push(checker);
    const upstream = new WebSocket(`${target}${req.url ?? ''}`, { headers: { authorization: req.headers.authorization ?? '' } });
    const early: string[] = [];
    const read = (side: 'robot' | 'platform', data: RawData) => {
      const text = data.toString();
      try {
        const message = JSON.parse(text) as Record<string, unknown>;
        if (side === 'robot') checker.request(message as { id: number; type: string });
        else checker.server(message);
      } catch (err) {
        violations.push(`${side}: ${(err as Error).message}`);
      }
      return text;
    };
    robot.on('message', (data) => {
      const text = read('robot', data);
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else early.push(text);
    });
    upstream.on('open', () => {
      for (const text of early.splice(0)) upstream.send(text);
    });
    upstream.on('message', (data) => robot.send(read('platform', data)));
    // the platform's pings reach the robot, whose silence rule counts them as signs of life
    upstream.on('ping', (data) => robot.ping(data));
    upstream.on('close', (code, reason) => robot.close(sendable(code), reason));
    robot.on('close', (code, reason) => (upstream.readyState === WebSocket.CONNECTING ? upstream.terminate() : upstream.close(sendable(code), reason)));
    // a refused upgrade (a key the platform refuses): the robot hears the same status as a close
    upstream.on('unexpected-response', (req, res) => {
      req.destroy();
      robot.close(res.statusCode === 401 ? 4001 : 1011, `HTTP ${res.statusCode}`);
    });
    upstream.on('error', () => robot.terminate());
    robot.on('error', () => upstream.terminate());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    violations,
    checked: () => [...new Set(checkers.flatMap((c) => c.checked()))].sort(),
    async close() {
      for (const c of wss.clients) c.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
