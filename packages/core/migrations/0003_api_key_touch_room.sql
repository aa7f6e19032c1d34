-- last_used_at is written about once a second for every key in use (the API buffers uses and
-- writes them in one UPDATE). It is in no index, so each write can stay on the row's page as a
-- HOT update, with no index entry to add — when the page has room. Full pages (the default)
-- sent most of those writes to new pages, with an entry in every index of api_keys. Leaving 30 %
-- of each page free made the write ~3 × cheaper (BENCHMARKS.md, B1). Pages written from now on
-- keep the room; a table's existing pages get it when it is rewritten (VACUUM FULL, CLUSTER).
alter table api_keys set (fillfactor = 70);
