import { usePgBouncer } from '@svc/testing';

// fault-outbox.test.ts again, its processes behind the run's PgBouncer in transaction mode (docs/decisions/pgbouncer.md)
usePgBouncer();
require('./fault-outbox.test');
