"""
The simulated robot on the Python SDK: ``python3 -m svc_agent.sim``.

It takes the same flags, environment variables, config file and journal format as the
TypeScript simulator (apps/agent-sim, docs/agent-sim.md), so a test that starts one can start the
other: both are robots holding a machine key and the platform's URL, nothing else.
"""
