import { usePythonRobots } from '@svc/testing';

// machine-online.test.ts again, with the Python SDK's simulator as the robot (python3 -m svc_agent.sim)
usePythonRobots();
require('./machine-online.test');
