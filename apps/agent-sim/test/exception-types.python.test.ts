import { usePythonRobots } from '@svc/testing';

// exception-types.test.ts again, with the Python SDK's simulator as the robot (python3 -m svc_agent.sim)
usePythonRobots();
require('./exception-types.test');
