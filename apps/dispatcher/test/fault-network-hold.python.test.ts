import { usePythonRobots } from '@svc/testing';

// fault-network-hold.test.ts again, with the Python SDK's simulator as the robot (python3 -m svc_agent.sim)
usePythonRobots();
require('./fault-network-hold.test');
