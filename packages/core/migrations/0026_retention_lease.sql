-- A scope's retention pass holds a lease for as long as its batches run (docs/decisions/retention.md,
-- "One pass per scope at a time"). Each batch already takes the scope's transaction lock, but a pass
-- is many transactions: two passes of one scope (ticks that overlap, on one dispatcher or two)
-- alternated their batches, and each took its duty share of the time, so the work the pass does in
-- the background grew with the number of ticks under way. `passing_by` is the engine running the
-- pass; a lease past `passing_until` (its process died) is free.
alter table retention_progress add column passing_by uuid, add column passing_until timestamptz;
