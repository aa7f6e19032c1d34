import { Type, type Static } from '@sinclair/typebox';
import { MAX_TAKE } from '../queue-items/transitions';

/**
 * The machine protocol's messages (docs/agent-protocol.md): what a robot may send, checked with
 * the same validator as every request body, and what the server pushes. One schema per request.
 */

const Id = Type.String({ format: 'uuid' });
const Attempt = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Text = (maxLength: number) => Type.String({ maxLength });
const LogChunk = Type.Object({ text: Text(64 * 1024), seq: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })) }, { additionalProperties: false });
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

export const JobFinishMessage = Type.Object({
  ...Envelope('job.finish'),
  ...progressFields,
  status: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('stopped'), Type.Literal('timed_out')]),
  output_data: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  error_message: Type.Optional(Type.Union([Text(10_000), Type.Null()])),
}, { additionalProperties: false });

export const Bye = Type.Object({ ...Envelope('bye') }, { additionalProperties: false });

const ItemRef = Type.Object({ id: Id, attempt: Attempt }, { additionalProperties: false });
const Outcome = Type.Object({
  id: Id,
  attempt: Attempt,
  status: Type.Union([Type.Literal('completed'), Type.Literal('pending_review'), Type.Literal('failed')]),
  result: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  error_message: Type.Optional(Type.Union([Text(10_000), Type.Null()])),
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
  prompt: Type.Unknown(),
  options: Type.Optional(Type.Unknown()),
}, { additionalProperties: false });

/** The robot holds a run it was handed (`job.start`): until then the run may go back to pending. */
export const JobStarted = Type.Object({ ...Envelope('job.started'), ...Fenced }, { additionalProperties: false });

export const InputRead = Type.Object({ ...Envelope('job.input.read'), ...Fenced }, { additionalProperties: false });

/** An asset of the machine's workspace, read by one of its runs. */
export const AssetGet = Type.Object({
  ...Envelope('asset.get'),
  ...Fenced,
  name: Type.String({ minLength: 1, maxLength: 255 }),
  environment: Type.Optional(Type.Union([Type.Literal('production'), Type.Literal('staging'), Type.Literal('dev')])),
}, { additionalProperties: false });

export const REQUESTS = {
  heartbeat: Heartbeat, 'job.started': JobStarted, 'job.progress': JobProgressMessage, 'job.finish': JobFinishMessage, bye: Bye,
  'items.take': ItemsTake, 'items.release': ItemsRelease, 'jobs.waiting': JobsWaiting,
  'job.input.ask': InputAsk, 'job.input.read': InputRead, 'asset.get': AssetGet,
} as const;
export type RequestType = keyof typeof REQUESTS;
export type RequestOf<T extends RequestType> = Static<(typeof REQUESTS)[T]>;

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
