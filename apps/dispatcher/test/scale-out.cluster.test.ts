import { useRedisCluster } from '@svc/testing';

// scale-out.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./scale-out.test');
