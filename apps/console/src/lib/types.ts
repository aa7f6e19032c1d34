/** The shapes of the API's answers the console reads (docs/endpoints.md, GET /api/v1/openapi.json). */
import type { SchedulePreviewResponse, ScheduleResponse, TriggerResponse } from '@svc/core';
import type { QueueItemStatus } from '@svc/core/queue-items/statuses';

// the statuses' list is core's, bundled from a module without dependencies; the response types
// below that core declares are imported as types only (erased from the bundle)
export { QUEUE_ITEM_STATUSES as ITEM_STATUSES } from '@svc/core/queue-items/statuses';
export type ItemStatus = QueueItemStatus;

export interface PageMeta {
  page: number;
  limit: number;
  total: number;
  pages: number;
}

export interface User {
  id: string;
  email: string;
  name: string | null;
  role: 'admin' | 'member';
  tenant_id: string;
}

export interface LoginAnswer {
  access_token: string;
  token_type: 'Bearer';
  expires_at: string;
  user: User;
}

export interface Queue {
  id: string;
  name: string;
  description: string | null;
  max_retries: number;
  is_active: boolean;
  is_paused: boolean;
  item_counts: Record<ItemStatus | 'total', number>;
}

export interface QueueStats {
  counts: Record<ItemStatus, number>;
  ready: number;
  postponed: number;
  oldest_ready_at: string | null;
  deadline_at_risk: number;
  completed_last_hour: number;
  failed_last_hour: number;
  avg_processing_ms_last_hour: number | null;
  consumers_running: number;
  is_paused: boolean;
}

export interface QueueItem {
  id: string;
  queue_id: string;
  status: ItemStatus;
  priority: number;
  reference: string | null;
  deadline: string | null;
  postpone: string | null;
  data: Record<string, unknown>;
  result: Record<string, unknown> | null;
  retry_count: number;
  error_message: string | null;
  processed_by: string | null;
  created_at: string;
  processed_at: string | null;
  reviewed_by: string | null;
  reviewed_at: string | null;
}

export interface Machine {
  id: string;
  name: string;
  description?: string | null;
  status: 'online' | 'busy' | 'offline';
  slots: number;
  kind?: 'attended' | 'unattended';
  running_jobs: number;
  is_active: boolean;
  last_heartbeat_at: string | null;
  agent_version?: string | null;
}

export interface ResourceMetrics {
  cpu_percent_avg: number;
  cpu_percent_peak: number;
  ram_mb_avg: number;
  ram_mb_peak: number;
  disk_read_mb: number;
  disk_write_mb: number;
  sample_count: number;
  duration_seconds: number;
}

/** JobResponse (GET /settings/jobs, /settings/jobs/{id}). */
export interface Job {
  id: string;
  process_id: string;
  machine_id: string;
  status: string;
  error_message: string | null;
  finished_at: string | null;
  created_at: string;
  process_name?: string | null;
  machine_name?: string | null;
  priority: number;
  input_data: Record<string, unknown> | null;
  output_data: Record<string, unknown> | null;
  started_at: string | null;
  updated_at: string;
  retry_count: number;
  stop_requested: boolean;
  is_attended: boolean;
  pending_input_prompt: string | null;
  pending_input_options: Record<string, unknown> | null;
  progress_percent: number | null;
  progress_message: string | null;
  resource_metrics: ResourceMetrics | null;
  trigger_id: string | null;
  schedule_id: string | null;
  logs_archived: boolean;
}

/** GET /settings/jobs/{id}/logs: the whole log, inline or from the archive. */
export interface JobLogs {
  job_id: string;
  status: string;
  logs: string | null;
  archived: boolean;
  archive_key: string | null;
  size_bytes: number;
  dropped_bytes: number;
}

/** The few fields of a process the jobs filter names it by. */
export interface ProcessName {
  id: string;
  name: string;
}

/* The admin pages' records (API keys, audit log, schedules, triggers, processes). */

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  is_active: boolean;
  last_used_at: string | null;
  expires_at: string | null;
  allowed_ips: string[] | null;
  scopes: string[];
  environments: string[] | null;
  created_at: string;
}

export interface ApiKeyWithSecret extends ApiKey {
  key: string;
}

export const ENVIRONMENTS = ['dev', 'staging', 'production'] as const;

export interface CursorMeta {
  limit: number;
  next_cursor: string | null;
}

export const AUDIT_ACTOR_TYPES = ['user', 'api_key', 'system', 'machine'] as const;

export interface AuditEntry {
  id: number;
  created_at: string;
  action: string;
  actor_type: string;
  actor_id: string | null;
  source: string;
  resource_type: string | null;
  resource_id: string | null;
  details: Record<string, unknown>;
  request_id: string | null;
  ip: string | null;
}

export interface Process {
  id: string;
  name: string;
  is_active: boolean;
}

export type Schedule = ScheduleResponse;
export const MISSED_RUNS = ['skip', 'run_once'] as const satisfies ReadonlyArray<Schedule['missed_runs']>;

export type SchedulePreview = SchedulePreviewResponse;

export type Trigger = TriggerResponse;
