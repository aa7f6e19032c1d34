import { usePgBouncer } from '@svc/testing';

// jobs-lifecycle.test.ts again, its processes behind the run's PgBouncer in transaction mode (docs/decisions/pgbouncer.md)
usePgBouncer();
require('./jobs-lifecycle.test');
