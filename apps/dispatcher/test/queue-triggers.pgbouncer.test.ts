import { usePgBouncer } from '@svc/testing';

// queue-triggers.test.ts again, its processes behind the run's PgBouncer in transaction mode (docs/decisions/pgbouncer.md)
usePgBouncer();
require('./queue-triggers.test');
