import { useRedisCluster } from '@svc/testing';

// idempotency.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./idempotency.test');
