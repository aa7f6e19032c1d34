import { usePgBouncer } from '@svc/testing';

// webhooks.test.ts again, its processes behind the run's PgBouncer in transaction mode (docs/decisions/pgbouncer.md)
usePgBouncer();
require('./webhooks.test');
