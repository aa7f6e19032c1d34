-- A running job's lease (docs/decisions/postgres-outages.md). The agent renews it on every
-- heartbeat while the run shows signs of life; the dispatcher ends a running job whose lease
-- lapsed although its machine still heartbeats (a run that died or hangs inside a live agent),
-- and its items follow the queue's retry policy. NULL: no lease (jobs started before this
-- migration, or by a caller that does not renew), never lapses.
-- lease_holder names the delivery that started the run: an agent that lost the answer to its
-- start (the connection dropped mid-statement) asks again with the same holder and gets its own
-- start back instead of finding the job "already running".
-- The dispatcher's lapsed-lease sweep walks jobs_active_idx (running jobs are few).
alter table jobs
  add column lease_expires_at timestamptz,
  add column lease_holder uuid;

-- An Idempotency-Key claim whose answer was lost (the connection dropped mid-statement) may or
-- may not exist. Its API process names each claim with a random nonce before sending it, and
-- frees the claim by that nonce once Postgres answers again, so the client's retry does not wait
-- for the in-flight lease (60 s) to run out.
alter table idempotency_keys add column claim_nonce uuid;
