import { useRedisCluster } from '@svc/testing';

// fault-redis-flush.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./fault-redis-flush.test');
