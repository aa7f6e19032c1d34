-- A run's hand-off to its robot (docs/decisions/agent-protocol.md, "A hand-off the robot never
-- acknowledged"). The platform starts a job (running, attempt + 1) and then pushes `job.start`
-- over the robot's connection; that push can be lost with the connection or with the API replica
-- that sent it. acknowledged_at is stamped when the robot says it holds the run (`job.started`,
-- or the run listed in a heartbeat) and cleared by every start. A running job never acknowledged
-- never ran: when its lease lapses, its robot leaves or a fresh robot process starts, it goes back
-- to pending and is handed out again instead of failing. Running jobs started before this
-- migration count as acknowledged.
alter table jobs add column acknowledged_at timestamptz;
update jobs set acknowledged_at = started_at where status in ('running', 'waiting_input');
