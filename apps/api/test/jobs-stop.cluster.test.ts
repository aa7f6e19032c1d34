import { useRedisCluster } from '@svc/testing';

// jobs-stop.test.ts again, on the run's three-primary Redis Cluster (docs/decisions/redis-cluster.md)
useRedisCluster();
require('./jobs-stop.test');
