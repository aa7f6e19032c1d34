"""
The Python simulator's reading of command lines and config files, and its random draws, for the
parity test (sim-parity.test.ts): cases as JSON on stdin, results as JSON on stdout, in the shape
agent-sim's parseOptions gives, so that the test compares the two simulators value for value.
"""

import dataclasses
import json
import sys

from svc_agent.sim.behaviour import create_random, draw_end, metrics_at, metrics_profile, parse_distribution, sample
from svc_agent.sim.options import UsageError, behaviour_for, parse_options


def behaviour(b):
    d = dataclasses.asdict(b)
    d["metrics"] = {k: {"min": lo, "max": hi} for k, (lo, hi) in b.metrics.items()}
    return d


def options_case(case):
    try:
        o = parse_options(case["argv"], case["env"])
    except UsageError as err:
        return {"error": str(err).split("\n")[0]}
    return {
        "url": o.url,
        "machineKeys": o.machine_keys,
        "defaults": behaviour(o.defaults),
        "seed": o.seed,
        "heartbeatMs": o.heartbeat_ms,
        "journal": o.journal,
        "allowInsecure": o.allow_insecure,
        "hasCa": o.ca_file is not None,
        "keysOnCommandLine": o.keys_on_command_line,
        "behaviours": {p["name"]: behaviour(behaviour_for(o, p["id"], p["name"])) for p in case.get("processes", [])},
    }


def distribution_case(value):
    try:
        return parse_distribution(value)
    except ValueError as err:
        return {"error": str(err)}


def draws_case(case):
    r = create_random(case["seed"])
    b = parse_options(["--machine-key", "k"], {"SVC_URL": "http://127.0.0.1:1"}).defaults
    if "rates" in case:
        # how n items, then n jobs, end (draw_end), one draw each from the seed's generator
        b = dataclasses.replace(b, **case["rates"])
        return {
            "items": [draw_end(b, r(), True) for _ in range(case["n"])],
            "jobs": [draw_end(b, r(), False) for _ in range(case["n"])],
        }
    return {
        "uniform": [sample({"dist": "uniform", "min_ms": 10, "max_ms": 20}, r) for _ in range(5)],
        "normal": sample({"dist": "normal", "mean_ms": 100, "stddev_ms": 30}, r),
        "exponential": sample({"dist": "exponential", "mean_ms": 100}, r),
        "metrics": metrics_at(metrics_profile(b, r), 1500, 3000),
    }


cases = json.load(sys.stdin)
json.dump({
    "options": [options_case(c) for c in cases["options"]],
    "distributions": [distribution_case(v) for v in cases["distributions"]],
    "draws": [draws_case(c) for c in cases["draws"]],
}, sys.stdout)
