import { Type, type Static } from '@sinclair/typebox';

/**
 * The machine protocol's messages (docs/agent-protocol.md): what a robot may send, checked with
 * the same validator as every request body, and what the server pushes. One schema per request.
 */

const Id = Type.String({ format: 'uuid' });
const Attempt = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });
const Text = (maxLength: number) => Type.String({ maxLength });
const LogChunk = Type.Object({ text: Text(64 * 1024), seq: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })) }, { additionalProperties: false });
const Metrics = Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 32 });

export const Heartbeat = Type.Object({
  id: Type.Integer(),
  type: Type.Literal('heartbeat'),
  running: Type.Array(Type.Object({ job_id: Id, attempt: Attempt, alive: Type.Boolean() }, { additionalProperties: false }), { maxItems: 1000 }),
  agent_version: Type.Optional(Text(100)),
  host: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), { maxProperties: 16 })),
}, { additionalProperties: false });

const progressFields = {
  job_id: Id,
  attempt: Attempt,
  progress_percent: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()])),
  progress_message: Type.Optional(Type.Union([Text(1000), Type.Null()])),
  resource_metrics: Type.Optional(Type.Union([Metrics, Type.Null()])),
  log: Type.Optional(LogChunk),
};

export const JobProgressMessage = Type.Object({ id: Type.Integer(), type: Type.Literal('job.progress'), ...progressFields }, { additionalProperties: false });

export const JobFinishMessage = Type.Object({
  id: Type.Integer(),
  type: Type.Literal('job.finish'),
  ...progressFields,
  status: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('stopped'), Type.Literal('timed_out')]),
  output_data: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  error_message: Type.Optional(Type.Union([Text(10_000), Type.Null()])),
}, { additionalProperties: false });

export const Bye = Type.Object({ id: Type.Integer(), type: Type.Literal('bye') }, { additionalProperties: false });

export const REQUESTS = { heartbeat: Heartbeat, 'job.progress': JobProgressMessage, 'job.finish': JobFinishMessage, bye: Bye } as const;
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
