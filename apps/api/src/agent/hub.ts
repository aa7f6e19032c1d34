import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import pLimit from 'p-limit';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  es, AppError, MACHINE_KEY_PREFIX, UnauthorizedError, bearerToken, clientIp, createRedis, decodeAbort, decodeInputAnswered, decodeMachineWork, sha256Hex, type RedisClient,
} from '@svc/core';
import { AGENT_CLOSE, AGENT_CONNECTION_LIMITS as LIMITS, AGENT_MAX_MESSAGE_BYTES, type AgentMachine } from '@svc/core/machine-protocol';
import { countAgentCut, trackAgentHub } from '@svc/core/observability';
import type { ApiDeps } from '../deps';
import { createLiveness } from './liveness';
import { MachineSession, type SessionDeps } from './session';

/** The path robots connect to (docs/agent-protocol.md). */
export const AGENT_PATH = '/api/v1/agent/connect';
/** How often each connected machine's key is checked (rotated, deactivated). */
const CHECK_MS = 500;
/** The check period is cut in this many ticks, each checking one slice of the connections. */
const CHECK_SLICES = 4;
/**
 * Robots' statements run at once per process, outside the batchers (heartbeats, lease renewals,
 * takes, key look-ups, the liveness flush, each one or two at a time): half the API's pool, so
 * that robots' work, however much of it, leaves the HTTP API connections.
 */
const ROBOT_DB_CONCURRENCY = 10;
/** The ping period is cut in this many ticks, each pinging the connections of one slice. */
export const PING_SLICES = 16;
/** How long a machine's queue is read after its last sign of work (several heartbeats). */
const WORKER_IDLE_MS = 30_000;

/**
 * The robots connected to this API process (docs/decisions/agent-protocol.md). It upgrades
 * `GET /api/v1/agent/connect` to a WebSocket for a valid machine key (401 and 429 answered before
 * the upgrade, the key looked up only within the address's failure budget), keeps one session per
 * connection, and:
 * - passes each stop and each answer to a job's question published on Redis (from any replica
 *   or the dispatcher) to the session holding the job, and each "this machine has jobs" to the
 *   session holding the machine, which reads its queue only then (an idle robot costs no Redis
 *   connection: the process's machine workers share one for commands);
 * - checks every CHECK_MS, in one statement, that each connection's key still opens its machine:
 *   a rotated key or a deactivated machine is cut within a second (close 4001);
 * - when a machine connects, tells every replica, and the older connection of that machine is
 *   closed (4002): a robot whose previous socket half-died does not hold two sets of slots;
 * - pings every connection each `pingMs` (MACHINE_PING_MS), spread over the period by slices: a
 *   connection that answered nothing since its previous ping went silent without closing (a NAT
 *   or a load balancer dropped it) and is destroyed, releasing what its session holds.
 * A connection the server closed acts on nothing it still sends, and is destroyed if it does not
 * answer the close within a second.
 */
export interface AgentHub {
  attach(server: Server): void;
  readonly size: number;
  /** connections whose machine's queue is being read now */
  readonly reading: number;
  /** connections not read from until their robot reads its replies */
  readonly paused: number;
  close(): Promise<void>;
}

export interface AgentHubOptions {
  messagesPerSecond?: number;
  maxInFlight?: number;
  maxUnreadBytes?: number;
  pauseReadingAboveBytes?: number;
  workerIdleMs?: number;
  robotDbConcurrency?: number;
  robotStatementsPerSecond?: number;
}

/**
 * A machine's statements per second, counted in windows of a tenth of a second (or one
 * statement's share of a second): a robot's burst reaches Postgres spread over the second, not
 * all at its start.
 */
function statementPace(perSecond: number): RateLimiterMemory {
  if (!(perSecond > 0)) throw new Error(`robotStatementsPerSecond must be above 0, got ${perSecond}`);
  const windowSeconds = Math.max(0.1, 1 / perSecond);
  return new RateLimiterMemory({ points: Math.max(1, Math.round(perSecond * windowSeconds)), duration: windowSeconds, keyPrefix: 'machine-statements' });
}

export function createAgentHub(deps: ApiDeps, options: AgentHubOptions = {}): AgentHub {
  const perSecond = options.messagesPerSecond ?? LIMITS.messagesPerSecond;
  const { config, engine, logger, keys } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: AGENT_MAX_MESSAGE_BYTES });
  const heartbeatMs = Math.max(200, Math.min(5000, Math.floor((config.machineOfflineAfterSeconds * 1000) / 3)));
  // a Postgres outage is logged once per process, for the connections' periodic writes too
  const { outage } = deps;
  let workerConnection: RedisClient | null = null;
  const sessionDeps: SessionDeps = {
    engine, bullPrefix: keys.bull, logger, outage,
    workerConnection: () => {
      if (!workerConnection) {
        workerConnection = createRedis(config.redis, { blocking: true });
        workerConnection.on('error', () => undefined);
      }
      return workerConnection;
    },
    workerIdleMs: options.workerIdleMs ?? WORKER_IDLE_MS,
    encryptionKey: config.assetEncryptionKey,
    heartbeatMs,
    pingMs: config.machinePingMs,
    maxInFlight: options.maxInFlight ?? LIMITS.maxInFlight,
    maxUnreadBytes: options.maxUnreadBytes ?? LIMITS.maxUnreadBytes,
    pauseReadingAboveBytes: options.pauseReadingAboveBytes ?? Math.min(LIMITS.pauseReadingAboveBytes, (options.maxUnreadBytes ?? LIMITS.maxUnreadBytes) / 2),
    dbBudget: pLimit(options.robotDbConcurrency ?? ROBOT_DB_CONCURRENCY),
    statementPace: statementPace(options.robotStatementsPerSecond ?? LIMITS.statementsPerSecond),
    // a machine's last heartbeat trails its robot by at most a second (or half a heartbeat period)
    liveness: createLiveness(engine, { flushMs: Math.min(1000, Math.max(100, Math.floor(heartbeatMs / 2))), logger, outage }),
    // a run's lease spans at least three heartbeats, like a machine's silence before it is offline
    leaseSeconds: Math.max(config.machineOfflineAfterSeconds, (3 * heartbeatMs) / 1000),
  };
  const connectedChannel = `${keys.prefix}:agent:connected`;
  const sessions = new Map<string, { session: MachineSession; connection: string }>();
  let sub: RedisClient | null = null;
  let subscribed: Promise<unknown> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let pinger: NodeJS.Timeout | null = null;
  let pingSlice = 0;
  let closing = false;

  const subscriber = (): Promise<unknown> => {
    if (subscribed) return subscribed;
    const s = createRedis(config.redis, { blocking: true });
    sub = s;
    s.on('error', () => undefined);
    s.on('message', (channel: string, raw: string) => {
      if (channel === connectedChannel) {
        const news = parseConnected(raw);
        const held = news && sessions.get(news.machine_id);
        if (held && held.connection !== news.connection) {
          countAgentCut('replaced');
          void held.session.close(AGENT_CLOSE.replaced, es.agent.reconnected);
        }
        return;
      }
      if (channel === keys.machineWork) {
        for (const m of decodeMachineWork(raw)?.machines ?? []) sessions.get(m.machine_id)?.session.wantWork(m.at);
        return;
      }
      if (channel === keys.jobInputs) {
        const news = decodeInputAnswered(raw);
        if (news) sessions.get(news.machine_id)?.session.onInput(news);
        return;
      }
      const msg = decodeAbort(raw);
      if (msg) sessions.get(msg.machine_id)?.session.onAbort(msg);
    });
    subscribed = s.subscribe(keys.jobStops, keys.jobInputs, keys.machineWork, connectedChannel).catch((err) => {
      // Redis away: the next connection tries again
      subscribed = null;
      sub = null;
      s.disconnect();
      throw err;
    });
    return subscribed;
  };

  /**
   * One slice of the connections each tick (each connection checked once every CHECK_MS): a
   * fleet's check in one statement would hold the event loop, and every robot's requests with it.
   */
  let checkSlice = 0;
  let checking = false;
  const check = async (): Promise<void> => {
    // a slow Postgres: the next slice waits rather than piling statements up on the pool
    if (checking) return;
    checkSlice = (checkSlice + 1) % CHECK_SLICES;
    const held = [...sessions.values()].map((h) => h.session).filter((s) => s.pingSlice % CHECK_SLICES === checkSlice);
    if (held.length === 0) return;
    try {
      checking = true;
      const lapsed = new Set(await engine.machines.lapsedKeys(held.map((s) => ({ id: s.machine.id, keyHashHex: s.keyHashHex }))).finally(() => {
        checking = false;
      }));
      outage.ok();
      for (const s of held) {
        if (!lapsed.has(s.machine.id)) continue;
        countAgentCut('credential');
        void s.close(AGENT_CLOSE.credentialLapsed, es.agent.keyNoLongerValid);
      }
    } catch (err) {
      if (!outage.failed(err, 'checking machine keys')) logger.warn('machine keys could not be checked', { err: (err as Error).message });
    }
  };

  const refuse = (socket: Duplex, err: AppError, requestId: string): void => {
    const body = JSON.stringify({ success: false, error: { code: err.code, message: err.message, request_id: requestId } });
    const extra = Object.entries(err.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.end(
      `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${extra}Connection: close\r\n\r\n${body}`,
    );
  };

  const upgrade = async (req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    const requestId = randomUUID();
    socket.on('error', () => undefined);
    try {
      if (closing) throw new AppError('HTTP_ERROR', 503, es.http.serverStopping);
      const key = bearerToken(req.headers.authorization);
      if (!key || !key.startsWith(MACHINE_KEY_PREFIX) || key.length > 256) throw new UnauthorizedError();
      const ip = clientIp(req.socket.remoteAddress ?? '', req.headers['x-forwarded-for'] as string | undefined, config.trustedProxyCount);
      const address = await deps.authThrottle.beforeLookup(ip);
      const machine = await engine.machines.findByKey(key).catch((err) => {
        address.settle(true);
        throw err;
      });
      address.settle(!!machine);
      if (!machine) throw new UnauthorizedError();
      await subscriber();
      wss.handleUpgrade(req, socket, head, (ws) => void accept(ws, machine, sha256Hex(key)));
    } catch (err) {
      if (err instanceof AppError) refuse(socket, err, requestId);
      else if (outage.failed(err, 'looking up a machine key')) {
        // Postgres away: the robot tries again with back-off
        refuse(socket, new AppError('HTTP_ERROR', 503, es.http.databaseUnavailable), requestId);
      } else {
        logger.error('machine connection failed', { err: (err as Error).message });
        socket.destroy();
      }
    }
  };

  const accept = async (ws: WebSocket, machine: AgentMachine, keyHashHex: string): Promise<void> => {
    const connection = randomUUID();
    const session = new MachineSession(sessionDeps, ws, machine, keyHashHex, Math.floor(Math.random() * PING_SLICES));
    const earlier = sessions.get(machine.id);
    if (earlier) {
      countAgentCut('replaced');
      void earlier.session.close(AGENT_CLOSE.replaced, es.agent.reconnected);
    }
    sessions.set(machine.id, { session, connection });
    void deps.redis.publish(connectedChannel, JSON.stringify({ machine_id: machine.id, connection })).catch(() => undefined);
    timer ??= setInterval(() => void check(), CHECK_MS / CHECK_SLICES).unref();
    // one timer for every connection of the process (a timer each would cost at fleet size), each
    // tick pinging the connections of one slice: a round of ten thousand at once would hold the
    // event loop, and every robot's requests with it
    pinger ??= setInterval(() => {
      pingSlice = (pingSlice + 1) % PING_SLICES;
      for (const h of sessions.values()) if (h.session.pingSlice === pingSlice) h.session.ping();
    }, Math.max(1, Math.floor(sessionDeps.pingMs / PING_SLICES))).unref();
    let window = Math.floor(Date.now() / 1000);
    let count = 0;
    ws.on('pong', () => session.heardFrom());
    ws.on('message', (data, isBinary) => {
      // a connection the server closed (a rotated key, a replaced connection): nothing it sends counts
      if (session.isClosed) return;
      session.heardFrom();
      if (isBinary) {
        void session.close(1003, es.agent.textJsonOnly);
        return;
      }
      const now = Math.floor(Date.now() / 1000);
      if (now !== window) {
        window = now;
        count = 0;
      }
      count++;
      if (count > perSecond * LIMITS.floodFactor) {
        countAgentCut('flood');
        void session.close(AGENT_CLOSE.rateLimited, es.agent.tooManyMessages);
        return;
      }
      if (count > perSecond) {
        session.refuseRateLimited(data.toString(), 1000 - (Date.now() % 1000));
        return;
      }
      void session.onMessage(data.toString());
    });
    ws.on('close', () => {
      if (sessions.get(machine.id)?.session === session) sessions.delete(machine.id);
      if (sessions.size === 0 && timer) {
        clearInterval(timer);
        timer = null;
      }
      if (sessions.size === 0 && pinger) {
        clearInterval(pinger);
        pinger = null;
      }
      void session.close(AGENT_CLOSE.normal, '');
    });
    ws.on('error', () => undefined);
    try {
      await session.start();
    } catch (err) {
      logger.warn('machine session could not start', { err: (err as Error).message });
      await session.close(1011, es.agent.sessionFailed);
    }
  };

  const hub: AgentHub = {
    attach(server) {
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        if ((req.url ?? '').split('?')[0] !== AGENT_PATH) {
          refuse(socket, new AppError('NOT_FOUND', 404), randomUUID());
          return;
        }
        void upgrade(req, socket, head);
      });
    },
    get size() {
      return sessions.size;
    },
    get reading() {
      let n = 0;
      for (const h of sessions.values()) if (h.session.reading) n++;
      return n;
    },
    get paused() {
      let n = 0;
      for (const h of sessions.values()) if (h.session.paused) n++;
      return n;
    },
    async close() {
      closing = true;
      if (timer) clearInterval(timer);
      timer = null;
      if (pinger) clearInterval(pinger);
      pinger = null;
      await Promise.all([...sessions.values()].map((h) => h.session.close(AGENT_CLOSE.goingAway, es.agent.serverStopping)));
      sessions.clear();
      await sessionDeps.liveness.close();
      sub?.disconnect();
      workerConnection?.disconnect();
      wss.close();
      untrack();
    },
  };
  const untrack = trackAgentHub(hub);
  return hub;
}

function parseConnected(raw: string): { machine_id: string; connection: string } | null {
  try {
    const m = JSON.parse(raw) as { machine_id?: unknown; connection?: unknown };
    return typeof m.machine_id === 'string' && typeof m.connection === 'string' ? { machine_id: m.machine_id, connection: m.connection } : null;
  } catch {
    return null;
  }
}
