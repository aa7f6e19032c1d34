-- Search by payload (docs/decisions/payload-search.md): `?data=` on a queue's items and
-- `?input_data=` on a workspace's jobs keep the rows whose JSON contains the filter's object
-- (`@>`). jsonb_path_ops indexes only containment, which is all these filters ask, in a smaller
-- index that is cheaper to keep up on every insert than the default jsonb_ops.
create index queue_items_data_idx on queue_items using gin (data jsonb_path_ops);
create index jobs_input_data_idx on jobs using gin (input_data jsonb_path_ops);
