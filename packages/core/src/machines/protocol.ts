import { EXCEPTION_TYPES } from '../queue-items/exception-types';
import { Type, type Static } from '@sinclair/typebox';
import { MAX_TAKE } from '../queue-items/take';
import { ASSET_VALUE_SCHEMAS, AssetTypeSchema } from '../catalog/schemas';
import { EnvironmentName } from '../api-keys/schemas';
import { JOB_STATUSES } from '../jobs/transitions';
import { LOG_APPEND_MAX_BYTES, LOG_TOTAL_MAX_BYTES } from '../jobs/logs';
import { MAX_INPUT_CHOICES, MAX_INPUT_OPTIONS_BYTES, MAX_INPUT_PROMPT_LENGTH } from '../jobs/input';
import { MAX_MACHINE_PING_MS } from '../config';

/**
 * The machine protocol's messages (docs/agent-protocol.md): what a robot may send, checked with
 * the same validator as every request body, what each request answers, and what the server
 * pushes. `scripts/agent-protocol-document.mjs` publishes them as docs/agent-protocol.schema.json.
 */

const Id = Type.String({ format: 'uuid' });
const Attempt = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Text = (maxLength: number) => Type.String({ maxLength });
/**
 * One append to the run's log: at most LOG_APPEND_MAX_BYTES of UTF-8 (checked in bytes when
 * applied); `seq` numbers the run's appends 1, 2, …, and an append whose `seq` is not above the
 * highest applied changes nothing (a repeat after a lost answer). A log keeps its first
 * LOG_TOTAL_MAX_BYTES, then a marker line.
 */
const LogChunk = Type.Object({
  text: Text(LOG_APPEND_MAX_BYTES),
  seq: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
}, { additionalProperties: false });
const Metrics = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 32 });
/**
 * Set by a client sending a request again because its answer was lost with a connection: the
 * request may already have been applied (see `items.take`).
 */
const Repeat = { repeat: Type.Optional(Type.Boolean()) };
/** W3C trace context of the robot's span the request belongs to: the platform's spans continue its trace. */
const Trace = { trace: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), { maxProperties: 4 })) };
const Envelope = (type: string) => ({ id: Type.Integer(), type: Type.Literal(type), ...Repeat, ...Trace });
const Fenced = { job_id: Id, attempt: Attempt };

export const Heartbeat = Type.Object({
  ...Envelope('heartbeat'),
  /** the first heartbeat of a robot process that runs nothing yet: the machine's earlier runs are given up */
  fresh: Type.Optional(Type.Boolean()),
  running: Type.Array(Type.Object({ job_id: Id, attempt: Attempt, alive: Type.Boolean() }, { additionalProperties: false }), { maxItems: 1000 }),
  agent_version: Type.Optional(Text(100)),
  host: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 16 })),
}, { additionalProperties: false });

const progressFields = {
  ...Fenced,
  progress_percent: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()])),
  progress_message: Type.Optional(Type.Union([Text(1000), Type.Null()])),
  resource_metrics: Type.Optional(Type.Union([Metrics, Type.Null()])),
  log: Type.Optional(LogChunk),
};

export const JobProgressMessage = Type.Object({ ...Envelope('job.progress'), ...progressFields }, { additionalProperties: false });

/**
 * What kind of failure ended an item or a run (docs/decisions/exception-types.md): `application`
 * (the default: a system did not answer, a screen was not found) is retried by the queue's or the
 * process's retry policy; `business` (the data itself is wrong: the invoice is already paid) is
 * final. Only with `status: "failed"`.
 */
export const ExceptionTypeSchema = Type.Union(EXCEPTION_TYPES.map((t) => Type.Literal(t)));

export const JobFinishMessage = Type.Object({
  ...Envelope('job.finish'),
  ...progressFields,
  status: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('stopped'), Type.Literal('timed_out')]),
  output_data: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  error_message: Type.Optional(Type.Union([Text(10_000), Type.Null()])),
  exception: Type.Optional(ExceptionTypeSchema),
}, { additionalProperties: false });

export const Bye = Type.Object({ ...Envelope('bye') }, { additionalProperties: false });

const ItemRef = Type.Object({ id: Id, attempt: Attempt }, { additionalProperties: false });
const Outcome = Type.Object({
  id: Id,
  attempt: Attempt,
  status: Type.Union([Type.Literal('completed'), Type.Literal('pending_review'), Type.Literal('failed')]),
  result: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  error_message: Type.Optional(Type.Union([Text(10_000), Type.Null()])),
  exception: Type.Optional(ExceptionTypeSchema),
}, { additionalProperties: false });

/** A consumer job settles the items it finished and takes the next ones, in one statement. */
export const ItemsTake = Type.Object({
  ...Envelope('items.take'),
  ...Fenced,
  outcomes: Type.Array(Outcome, { maxItems: 1000 }),
  take: Type.Integer({ minimum: 0, maximum: MAX_TAKE }),
  /** items the robot still holds unsettled: a repeated take hands back every other item the job holds */
  held: Type.Optional(Type.Array(Id, { maxItems: 1000 })),
}, { additionalProperties: false });

/** Items taken and not started go back to the queue untouched. */
export const ItemsRelease = Type.Object({ ...Envelope('items.release'), ...Fenced, items: Type.Array(ItemRef, { maxItems: 1000 }) }, { additionalProperties: false });

/** Whether another job waits for this machine (a consumer then gives its slot up). */
export const JobsWaiting = Type.Object({ ...Envelope('jobs.waiting'), ...Fenced }, { additionalProperties: false });

/** The run asks a person; the answer is announced with `job.input` and read with `job.input.read`. */
export const InputAsk = Type.Object({
  ...Envelope('job.input.ask'),
  ...Fenced,
  /** checked when applied, each refusal naming the field */
  prompt: Type.Unknown({ description: `a printable text of 1 to ${MAX_INPUT_PROMPT_LENGTH} characters` }),
  options: Type.Optional(Type.Unknown({
    description: `{"choices": [1 to ${MAX_INPUT_CHOICES} distinct JSON values]} or {"schema": a JSON Schema the answer must match}; at most ${MAX_INPUT_OPTIONS_BYTES} bytes of JSON`,
  })),
}, { additionalProperties: false });

/** The robot holds a run it was handed (`job.start`): until then the run may go back to pending. */
export const JobStarted = Type.Object({ ...Envelope('job.started'), ...Fenced }, { additionalProperties: false });

export const InputRead = Type.Object({ ...Envelope('job.input.read'), ...Fenced }, { additionalProperties: false });

/** An asset of the machine's workspace, read by one of its runs. */
export const AssetGet = Type.Object({
  ...Envelope('asset.get'),
  ...Fenced,
  name: Type.String({ minLength: 1, maxLength: 255 }),
  environment: Type.Optional(EnvironmentName),
}, { additionalProperties: false });

/** The requests a robot may send, by `type`. */
export const REQUESTS = {
  heartbeat: Heartbeat, 'job.started': JobStarted, 'job.progress': JobProgressMessage, 'job.finish': JobFinishMessage, bye: Bye,
  'items.take': ItemsTake, 'items.release': ItemsRelease, 'jobs.waiting': JobsWaiting,
  'job.input.ask': InputAsk, 'job.input.read': InputRead, 'asset.get': AssetGet,
} as const;
export type RequestType = keyof typeof REQUESTS;
export type RequestOf<T extends RequestType> = Static<(typeof REQUESTS)[T]>;

const IsoTime = Type.String({ format: 'date-time' });
const Json = Type.Record(Type.String(), Type.Unknown());
const StopRequested = Type.Object({ stop_requested: Type.Boolean() }, { additionalProperties: false });
const JobStatusSchema = Type.Union(JOB_STATUSES.map((s) => Type.Literal(s)));

/** What each request answers in its reply's `result`, by the request's `type`. */
export const RESULTS = {
  heartbeat: Type.Object({
    slots: Type.Integer({ minimum: 0 }),
    is_active: Type.Boolean(),
    /** one per run the heartbeat listed: `owned: false` means the platform ended it, stop it */
    runs: Type.Array(Type.Object({ job_id: Id, owned: Type.Boolean(), stop_requested: Type.Boolean() }, { additionalProperties: false })),
  }, { additionalProperties: false }),
  'job.started': StopRequested,
  'job.progress': StopRequested,
  'job.finish': Type.Object({ status: JobStatusSchema }, { additionalProperties: false }),
  'items.take': Type.Object({
    /** the outcomes applied; a stale one (another attempt of the item) is left out */
    settled: Type.Array(Type.Object({ id: Id, status: Type.String() }, { additionalProperties: false })),
    items: Type.Array(Type.Object({
      id: Id, attempt: Attempt, reference: Type.Union([Type.String(), Type.Null()]), data: Json, retry_count: Type.Integer({ minimum: 0 }),
    }, { additionalProperties: false }), { maxItems: MAX_TAKE }),
    /** items a repeated take handed back to the queue because the robot did not name them in `held` or `outcomes` */
    released_unknown: Type.Integer({ minimum: 0 }),
  }, { additionalProperties: false }),
  'items.release': Type.Object({ released: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
  'jobs.waiting': Type.Object({ waiting: Type.Boolean() }, { additionalProperties: false }),
  'job.input.ask': Type.Object({ waiting: Type.Literal(true) }, { additionalProperties: false }),
  'job.input.read': Type.Object({
    status: JobStatusSchema,
    stop_requested: Type.Boolean(),
    answer: Type.Union([Type.Object({ value: Type.Unknown() }, { additionalProperties: false }), Type.Null()]),
    timeout_at: Type.Union([IsoTime, Type.Null()]),
  }, { additionalProperties: false }),
  'asset.get': Type.Object({
    name: Type.String(),
    type: AssetTypeSchema,
    environment: EnvironmentName,
    value: Type.Union(Object.values(ASSET_VALUE_SCHEMAS)),
  }, { additionalProperties: false }),
  bye: Type.Object({}, { additionalProperties: false }),
} satisfies Record<RequestType, unknown>;
export type ResultOf<T extends RequestType> = Static<(typeof RESULTS)[T]>;

/** The answer to a request, `re` repeating its `id` (null for a message that was not JSON or had no numeric `id`). */
export const ReplyResult = Type.Object({ type: Type.Literal('reply'), re: Type.Union([Type.Integer(), Type.Null()]), result: Type.Unknown() }, { additionalProperties: false });
export const ReplyError = Type.Object({
  type: Type.Literal('reply'),
  re: Type.Union([Type.Integer(), Type.Null()]),
  /** the API's error codes and Spanish messages (VALIDATION_ERROR, NOT_FOUND, CONFLICT, RATE_LIMIT_EXCEEDED, …) */
  error: Type.Object({ code: Type.String(), message: Type.String(), details: Type.Optional(Type.Unknown()) }, { additionalProperties: false }),
}, { additionalProperties: false });

/** What the server sends on its own, by `type`: the welcome first, then pushes. */
export const PUSHES = {
  welcome: Type.Object({
    type: Type.Literal('welcome'),
    machine: Type.Object({ id: Id, name: Type.String(), slots: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
    heartbeat_ms: Type.Integer({ minimum: 1 }),
    lease_seconds: Type.Integer({ minimum: 1 }),
    ping_ms: Type.Integer({ minimum: 1 }),
  }, { additionalProperties: false }),
  'job.start': Type.Object({
    type: Type.Literal('job.start'),
    job: Type.Object({
      id: Id, attempt: Attempt, process_id: Id, process_name: Type.String(), input_data: Type.Union([Json, Type.Null()]),
      /** set for a consumer job: the queue whose items it takes */
      queue_id: Type.Union([Id, Type.Null()]),
      timeout_seconds: Type.Integer({ minimum: 1 }), retry_count: Type.Integer({ minimum: 0 }),
      started_at: IsoTime, timeout_at: Type.Union([IsoTime, Type.Null()]),
      trace: Type.Optional(Type.Record(Type.String(), Type.String())),
    }, { additionalProperties: false }),
  }, { additionalProperties: false }),
  'job.stop': Type.Object({
    type: Type.Literal('job.stop'), job_id: Id, reason: Type.Union([Type.Literal('stop'), Type.Literal('timeout'), Type.Literal('lost')]),
  }, { additionalProperties: false }),
  'job.input': Type.Object({ type: Type.Literal('job.input'), job_id: Id }, { additionalProperties: false }),
} as const;
export type PushType = keyof typeof PUSHES;
export type PushOf<T extends PushType> = Static<(typeof PUSHES)[T]>;
/** Every message the server sends. */
export type ServerMessage = { [T in PushType]: PushOf<T> }[PushType] | Static<typeof ReplyResult> | Static<typeof ReplyError>;

/** Close codes of the protocol's own (4000–4999 are the application's). */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  /** the key was rotated or the machine deactivated */
  credentialLapsed: 4001,
  /** the same machine connected again: the newer connection wins */
  replaced: 4002,
  /** too many messages */
  rateLimited: 4008,
} as const;

/** Largest message accepted (a job's output, a log chunk): larger closes the socket (1009). */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/** What one connection may ask of an API process (docs/agent-protocol.md, "Requests and replies"). */
export const CONNECTION_LIMITS = {
  /**
   * Messages a second: past it, requests are answered RATE_LIMIT_EXCEEDED (the robot waits and
   * sends them again); `floodFactor` times as many close the connection (4008). A busy consumer of
   * fast items sends a few hundred a second.
   */
  messagesPerSecond: 2000,
  floodFactor: 4,
  /** requests answered at once; more are refused RATE_LIMIT_EXCEEDED (a robot needs a few per run) */
  maxInFlight: 128,
  /**
   * Statements one machine's requests may start a second outside the batchers (heartbeats and
   * takes are batched): more wait their turn among those in flight, answered late, not refused.
   */
  statementsPerSecond: 200,
  /** unread replies (bytes, past what the network holds) from which the robot's requests are not read until it has read half */
  pauseReadingAboveBytes: 1024 * 1024,
  /** unread replies (bytes) past which the connection is destroyed */
  maxUnreadBytes: 8 * 1024 * 1024,
  /** the longest ping period a server is configured with (`ping_ms` in the welcome) */
  maxPingMs: MAX_MACHINE_PING_MS,
  /** bytes of UTF-8 in one log append, and kept of a run's whole log */
  logAppendMaxBytes: LOG_APPEND_MAX_BYTES,
  logTotalMaxBytes: LOG_TOTAL_MAX_BYTES,
} as const;

/**
 * Bounds on what a robot reports, in bytes of JSON, beyond the message's own: a machine's `host`
 * description, a run's `resource_metrics`, a job's `output_data` and an item's `result`. Stored
 * and shown on every read of the job, item or machine, they stay small whatever the robot sends.
 */
export const FIELD_MAX_BYTES = { host: 4 * 1024, resource_metrics: 16 * 1024, output_data: 256 * 1024, result: 256 * 1024 } as const;

/** The first field of a validated request over its bound, with its path and bound; null when none is. */
export function oversizedField(msg: Record<string, unknown>): { loc: Array<string | number>; max: number } | null {
  const over = (value: unknown, max: number) => value !== undefined && value !== null && Buffer.byteLength(JSON.stringify(value), 'utf8') > max;
  for (const field of ['host', 'resource_metrics', 'output_data'] as const) {
    if (over(msg[field], FIELD_MAX_BYTES[field])) return { loc: ['message', field], max: FIELD_MAX_BYTES[field] };
  }
  const outcomes = Array.isArray(msg.outcomes) ? (msg.outcomes as Array<{ result?: unknown }>) : [];
  for (const [i, o] of outcomes.entries()) {
    if (over(o.result, FIELD_MAX_BYTES.result)) return { loc: ['message', 'outcomes', i, 'result'], max: FIELD_MAX_BYTES.result };
  }
  return null;
}

/**
 * The first `exception` sent with a status other than `failed`, by its path (a kind of failure
 * means nothing on a success, and storing it would show a completed run as failed); null when none is.
 */
export function misplacedException(msg: Record<string, unknown>): Array<string | number> | null {
  if (msg.exception !== undefined && msg.status !== 'failed') return ['message', 'exception'];
  const outcomes = Array.isArray(msg.outcomes) ? (msg.outcomes as Array<{ status?: unknown; exception?: unknown }>) : [];
  for (const [i, o] of outcomes.entries()) {
    if (o.exception !== undefined && o.status !== 'failed') return ['message', 'outcomes', i, 'exception'];
  }
  return null;
}
