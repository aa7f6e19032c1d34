import { useRedisCluster } from '@svc/testing';

// api-key-auth.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./api-key-auth.test');
