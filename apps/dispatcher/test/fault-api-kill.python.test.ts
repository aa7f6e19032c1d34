import { usePythonRobots } from '@svc/testing';

// fault-api-kill.test.ts again, with the Python SDK's simulator as the robot (python3 -m svc_agent.sim)
usePythonRobots();
require('./fault-api-kill.test');
