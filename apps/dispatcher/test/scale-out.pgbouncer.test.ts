import { usePgBouncer } from '@svc/testing';

// scale-out.test.ts again, its processes behind the run's PgBouncer in transaction mode (docs/decisions/pgbouncer.md)
usePgBouncer();
require('./scale-out.test');
