-- Reads for operators and integrators (docs/decisions/operator-reads.md).
--
-- A queue's items by business reference, newest first: the reference filter of the items list
-- walks one reference's entries in list order and stops at the page (the count reads the same
-- entries). It replaces the (queue_id, reference) index, whose work it does too: one index per
-- item either way on the insert path.
create index queue_items_reference_list_idx on queue_items (queue_id, reference, created_at desc, id desc)
  where reference is not null;
drop index queue_items_reference_idx;

-- A workspace's jobs, newest first (GET /jobs/list), whole or by status / process / machine.
create index jobs_tenant_list_idx on jobs (tenant_id, created_at desc, id desc);
create index jobs_tenant_status_list_idx on jobs (tenant_id, status, created_at desc, id desc);
create index jobs_process_list_idx on jobs (process_id, created_at desc, id desc);
create index jobs_machine_list_idx on jobs (machine_id, created_at desc, id desc);
