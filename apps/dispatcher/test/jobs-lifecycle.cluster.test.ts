import { useRedisCluster } from '@svc/testing';

// jobs-lifecycle.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./jobs-lifecycle.test');
