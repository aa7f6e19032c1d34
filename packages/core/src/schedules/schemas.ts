import { Type, type Static } from '@sinclair/typebox';
import { ActiveFilter, CatalogName, Description, patchOf, RecordHead } from '../catalog/schemas';
import { DateTime, Nullable, PageQuery, Uuid } from '../validation/formats';
import { CRON_MAX_LENGTH, TIMEZONE_MAX_LENGTH } from './cron';

/** Request and response schemas of /settings/schedules (docs/decisions/schedules.md). */
const strict = { additionalProperties: false } as const;

export const MISSED_RUNS = ['skip', 'run_once'] as const;
export type MissedRuns = (typeof MISSED_RUNS)[number];

const scheduleProps = {
  name: CatalogName,
  description: Type.Optional(Description),
  process_id: Uuid({ description: 'The process to start; a process of the same workspace (else 422)' }),
  cron: Type.String({
    minLength: 1,
    maxLength: CRON_MAX_LENGTH,
    description: 'Five fields (minute hour day-of-month month day-of-week), or six with a leading seconds field; ' +
      'croner nicknames such as @daily are accepted. An invalid expression → 422 naming `cron`.',
  }),
  timezone: Type.Optional(Type.String({
    minLength: 1,
    maxLength: TIMEZONE_MAX_LENGTH,
    default: 'UTC',
    description: 'IANA time zone the cron times are read in (default UTC); an unknown one → 422 naming `timezone`',
  })),
  machine_id: Type.Optional(Nullable(Uuid({
    description: 'An active machine of the workspace to run on; null (default) = the least-loaded online machine at each run',
  }))),
  input_data: Type.Optional(Nullable(Type.Object({}, { additionalProperties: true, description: 'Handed to every run as its input_data' }))),
  priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 5, default: 3 })),
  is_active: Type.Optional(Type.Boolean({ default: true })),
  missed_runs: Type.Optional(Type.Union(MISSED_RUNS.map((m) => Type.Literal(m)), {
    default: 'skip',
    description: 'Ticks missed while no dispatcher ran: `skip` (default) starts no job for them, `run_once` starts one',
  })),
};
export const ScheduleCreate = Type.Object(scheduleProps, strict);
export type ScheduleCreate = Static<typeof ScheduleCreate>;
export const ScheduleUpdate = patchOf(scheduleProps);
export type ScheduleUpdate = Static<typeof ScheduleUpdate>;

export const ScheduleResponse = Type.Object({
  ...RecordHead,
  process_id: Uuid(),
  cron: Type.String(),
  timezone: Type.String(),
  machine_id: Nullable(Uuid()),
  input_data: Nullable(Type.Object({}, { additionalProperties: true })),
  priority: Type.Integer(),
  is_active: Type.Boolean(),
  missed_runs: Type.Union(MISSED_RUNS.map((m) => Type.Literal(m))),
  next_run_at: Nullable(DateTime({ description: 'The next tick that will start a job; null while inactive' })),
  last_run_at: Nullable(DateTime({ description: 'The tick of the last job started' })),
  last_job_id: Nullable(Uuid({ description: 'The last job started' })),
  last_error: Nullable(Type.String({ description: 'Why the last refused run was refused (quota, no machine, inactive process…); null once a run starts' })),
  last_error_at: Nullable(DateTime({ description: 'The tick of the last refused run' })),
  created_at: DateTime(),
  updated_at: DateTime(),
});
export type ScheduleResponse = Static<typeof ScheduleResponse>;

export const ScheduleListQuery = Type.Object({
  ...PageQuery,
  ...ActiveFilter,
  process_id: Type.Optional(Uuid({ description: 'Only the schedules of this process' })),
}, strict);
export type ScheduleListQuery = Static<typeof ScheduleListQuery>;

export const SchedulePreviewQuery = Type.Object({
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'How many runs to list (1..50, default 10)' })),
}, strict);
export const SchedulePreviewResponse = Type.Object({
  schedule_id: Uuid(),
  cron: Type.String(),
  timezone: Type.String(),
  runs: Type.Array(DateTime(), { description: 'The next ticks from now, oldest first, in UTC' }),
});
export type SchedulePreviewResponse = Static<typeof SchedulePreviewResponse>;
