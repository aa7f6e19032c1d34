import { EXCEPTION_TYPES, type ExceptionType } from '../queue-items/exception-types';
import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Nullable, PageQuery, Uuid } from '../validation/formats';
import { ContainmentFilterQuery } from '../validation/containment-filter';
import { JOB_STATUSES, type JobStatus } from './transitions';
import { LOGS_FIELD_DESCRIPTION } from './logs';

/**
 * Request and response schemas of the job endpoints. One source for
 * the API's validation, the OpenAPI document and the CLI.
 *
 * Bodies refuse unknown fields: a misspelt `input_data` or a `priority` sent to the webhook
 * (where it is not settable) would otherwise be dropped without a word.
 */
export const JobStatusName = Type.Unsafe<JobStatus>({ type: 'string', enum: [...JOB_STATUSES] });

const InputData = (description: string) => Nullable(Type.Object({}, { additionalProperties: true, description }));

export const TriggerJobBody = Type.Object(
  {
    process_id: Uuid({ description: 'The process to run; an active process of the key\'s tenant.' }),
    machine_id: Type.Optional(
      Nullable(Uuid({ description: 'An active machine of the tenant (it may be offline: the job waits). Omitted or null = auto-select the least-loaded online, active machine.' })),
    ),
    input_data: Type.Optional(InputData('Free JSON object handed to the process, not validated against its input_schema; null = no input.')),
    priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, default: 3, description: '1 = low, 3 = normal (default), 5 = urgent.' })),
  },
  { additionalProperties: false },
);
export type TriggerJobInput = Static<typeof TriggerJobBody>;

export const WebhookTriggerBody = Type.Object(
  {
    machine_id: Uuid({ description: 'An active machine of the tenant where the job runs.' }),
    input_data: Type.Optional(InputData('Validated against the process input_schema when it has one; null = no input.')),
  },
  { additionalProperties: false },
);
export type WebhookTriggerInput = Static<typeof WebhookTriggerBody>;

export const WebhookTriggerParams = Type.Object({ process_id: Uuid() });
export const JobIdParams = Type.Object({ job_id: Uuid() });

/** GET /jobs/list and its settings twin: newest first, paged; each filter narrows the list. */
export const JobListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(JobStatusName),
    process_id: Type.Optional(Uuid({ description: 'Only jobs of this process of the workspace (an id it does not have → 422)' })),
    machine_id: Type.Optional(Uuid({ description: 'Only jobs of this machine of the workspace (an id it does not have → 422)' })),
    input_data: ContainmentFilterQuery('input_data'),
  },
  { additionalProperties: false },
);
export type JobListQuery = Static<typeof JobListQuery>;

export const ResourceMetrics = Type.Object({
  cpu_percent_avg: Type.Number(),
  cpu_percent_peak: Type.Number(),
  ram_mb_avg: Type.Number(),
  ram_mb_peak: Type.Number(),
  disk_read_mb: Type.Number(),
  disk_write_mb: Type.Number(),
  sample_count: Type.Integer(),
  duration_seconds: Type.Number(),
});
export type ResourceMetricsValue = Static<typeof ResourceMetrics>;

const JsonObject = Type.Object({}, { additionalProperties: true });

/** JobResponse, every field. */
export const JobResponse = Type.Object({
  id: Uuid(),
  tenant_id: Uuid(),
  process_id: Uuid(),
  machine_id: Uuid(),
  status: JobStatusName,
  priority: Type.Integer({ minimum: 1, maximum: 5 }),
  input_data: Nullable(JsonObject),
  output_data: Nullable(JsonObject),
  logs: Nullable(Type.String({ description: LOGS_FIELD_DESCRIPTION })),
  error_message: Nullable(Type.String()),
  exception_type: Nullable(Type.Unsafe<ExceptionType>({
    type: 'string', enum: [...EXCEPTION_TYPES],
    description: 'A failed job\'s kind of failure: business (the robot said the data is wrong; never retried automatically) or application; null unless failed',
  })),
  started_at: Nullable(DateTime()),
  finished_at: Nullable(DateTime()),
  retry_count: Type.Integer(),
  stop_requested: Type.Boolean(),
  logs_archived: Type.Boolean({ description: 'true once the log moved to the archive (LOG_RETENTION_DAYS after the job ended); `logs` is then null.' }),
  logs_archive_key: Nullable(Type.String({ description: 'Where the archived log lives; read it through GET /api/v1/settings/jobs/{job_id}/logs.' })),
  is_attended: Type.Boolean({ description: 'The job runs on an attended machine (a person\'s desktop robot): set when the job is created' }),
  pending_input_prompt: Nullable(Type.String({
    description: 'While the job is `waiting_input`: what its robot asks a person (answer with POST /settings/jobs/{job_id}/input); null otherwise.',
  })),
  pending_input_options: Nullable(Type.Object({}, {
    additionalProperties: true,
    description: 'While the job is `waiting_input`: `{"choices": [...]}` (the answer must be one of them) or `{"schema": <JSON Schema>}` (the answer must satisfy it); null otherwise.',
  })),
  progress_percent: Nullable(Type.Integer({ minimum: 0, maximum: 100 })),
  progress_message: Nullable(Type.String()),
  created_at: DateTime(),
  updated_at: DateTime(),
  process_name: Nullable(Type.String()),
  machine_name: Nullable(Type.String()),
  resource_metrics: Nullable(ResourceMetrics),
  trigger_id: Nullable(Uuid({ description: 'The queue trigger that started this consumer job (GET /settings/triggers/{id}); null otherwise' })),
  schedule_id: Nullable(Uuid()),
});
export type JobResponse = Static<typeof JobResponse>;

/** The fields the contract documents for the stop response exactly. */
export const STOP_JOB_FIELDS = [
  'id', 'tenant_id', 'process_id', 'machine_id', 'status', 'priority', 'retry_count', 'stop_requested',
  'logs_archived', 'is_attended', 'created_at', 'updated_at', 'resource_metrics',
] as const;

export const StopJobResponse = Type.Pick(JobResponse, [...STOP_JOB_FIELDS]);
export type StopJobResponse = Static<typeof StopJobResponse>;
