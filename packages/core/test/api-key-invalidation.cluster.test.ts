import { useRedisCluster } from '@svc/testing';

// api-key-invalidation.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./api-key-invalidation.test');
