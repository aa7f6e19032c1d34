-- When a running job's stop was first requested, for the stop → stopped latency metric
-- (svc_job_stop_latency_seconds, docs/decisions/observability.md). Null for jobs never asked to stop.
alter table jobs add column stop_requested_at timestamptz;
