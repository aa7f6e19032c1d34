import { useRedisCluster } from '@svc/testing';

// rate-limit.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./rate-limit.test');
