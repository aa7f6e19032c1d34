"""
The simulator's command line, environment and config file: the same as agent-sim's
(docs/agent-sim.md). Layers: built-in defaults ← file ``defaults`` ← AGENT_BUSINESS_FAILURE_RATE ←
flags ← file ``processes["<process name or id>"]``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..transport import url_refusal
from .behaviour import DEFAULT_BEHAVIOUR, Behaviour, merge_behaviour

__all__ = ["SimOptions", "UsageError", "parse_options", "behaviour_for", "HELP"]


class UsageError(Exception):
    """The command line, environment or config file cannot be used (the process exits 2)."""


@dataclass
class SimOptions:
    """What the simulator was told."""

    #: the platform's base URL, or several separated by commas (tried in turn)
    url: str
    machine_keys: list[str]
    defaults: Behaviour
    #: per process name or id: settings over ``defaults``
    processes: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int | None = None
    heartbeat_ms: float | None = None
    journal: str | None = None
    allow_insecure: bool = False
    #: the certificate authority (PEM file) of the platform's certificate
    ca_file: str | None = None
    #: some key came on the command line (readable by every user of the host: the robot warns)
    keys_on_command_line: bool = False


FLAG_TO_SETTING = {
    "--duration": "duration",
    "--item-duration": "item_duration",
    "--failure-rate": "failure_rate",
    "--business-failure-rate": "business_failure_rate",
    "--review-rate": "review_rate",
    "--progress-steps": "progress_steps",
    "--log-lines": "log_lines",
    "--prefetch": "prefetch",
    "--crash": "crash",
    "--crash-after-items": "crash_after_items",
    "--failure-message": "failure_message",
    "--input-rate": "input_rate",
}


def _number(flag: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{flag} must be a number") from None


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read {what} {path}: {err}") from None


def parse_options(argv: list[str], env: Mapping[str, str]) -> SimOptions:
    """The options of ``argv`` (without the program) over the environment ``env``."""
    keys: list[str] = []
    # the environment's settings go under the flags' (a flag overrides its variable); an empty
    # variable is an unset one (how a compose file leaves it out)
    flag_settings: dict[str, Any] = {"business_failure_rate": env["AGENT_BUSINESS_FAILURE_RATE"]} if env.get("AGENT_BUSINESS_FAILURE_RATE") else {}
    config_path = env.get("AGENT_CONFIG")
    seed: int | None = None
    heartbeat_ms: float | None = None
    journal = env.get("AGENT_JOURNAL")
    url = env.get("SVC_URL")
    keys_file = env.get("AGENT_MACHINE_KEYS_FILE")
    ca_file = env.get("AGENT_CA_FILE")
    allow_insecure = env.get("AGENT_ALLOW_INSECURE") in ("1", "true")
    keys_on_command_line = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        flag, eq, rest = arg.partition("=")
        inline = rest if eq else None

        def value() -> str:
            nonlocal i
            if inline is not None:
                return inline
            i += 1
            if i >= len(argv):
                raise UsageError(f"{flag} needs a value")
            return argv[i]

        if flag == "--machine-key":
            keys.append(value())
            keys_on_command_line = True
        elif flag == "--machine-key-file":
            keys_file = value()
        elif flag == "--ca-file":
            ca_file = value()
        elif flag == "--allow-insecure":
            allow_insecure = True
        elif flag == "--url":
            url = value()
        elif flag == "--config":
            config_path = value()
        elif flag == "--seed":
            n = _number("--seed", value())
            if n != int(n):
                raise UsageError("--seed must be an integer")
            seed = int(n)
        elif flag == "--heartbeat-ms":
            heartbeat_ms = _number("--heartbeat-ms", value())
            if not heartbeat_ms >= 50:
                raise UsageError("--heartbeat-ms must be at least 50")
        elif flag == "--journal":
            journal = value()
        elif flag in FLAG_TO_SETTING:
            flag_settings[FLAG_TO_SETTING[flag]] = value()
        elif flag in ("--help", "-h"):
            raise UsageError(HELP)
        else:
            raise UsageError(f"unknown option {flag}\n\n{HELP}")
        i += 1

    file: dict[str, Any] = {}
    if config_path:
        try:
            file = json.loads(_read_text(config_path, "the config file"))
        except json.JSONDecodeError as err:
            raise UsageError(f"cannot read the config file {config_path}: {err}") from None
        if not isinstance(file, dict):
            raise UsageError(f"cannot read the config file {config_path}: it must hold a JSON object")
    keys += [k.strip() for k in env.get("AGENT_MACHINE_KEYS", "").split(",") if k.strip()]
    if keys_file:
        lines = (line.strip() for line in _read_text(keys_file, "the machine key file").splitlines())
        keys += [line for line in lines if line and not line.startswith("#")]
    if ca_file:
        # read now: a missing certificate authority is a mistake of the command line, said at once
        _read_text(ca_file, "the CA file")
    file_keys = file.get("machine_keys")
    if file_keys is None:
        file_keys = []
    if not isinstance(file_keys, list) or not all(isinstance(k, str) for k in file_keys):
        raise UsageError("machine_keys in the config file must be a list of strings")
    keys += file_keys
    machine_keys = list(dict.fromkeys(keys))
    if not machine_keys:
        raise UsageError(f"no machine key: pass --machine-key svc_mk_… (or AGENT_MACHINE_KEYS)\n\n{HELP}")
    urls = [u.strip() for u in (url or "").split(",") if u.strip()]
    if not urls:
        raise UsageError(f"no platform URL: set SVC_URL (e.g. http://127.0.0.1:3000) or pass --url\n\n{HELP}")
    for u in urls:
        refusal = url_refusal(u, allow_insecure)
        if refusal:
            # the simulator's way to allow it, instead of the SDK's option
            raise UsageError("SVC_URL: " + re.sub(r" \(allow_insecure=True\)$", " (--allow-insecure, AGENT_ALLOW_INSECURE=1)", refusal))
    processes = file.get("processes")
    if processes is None:
        processes = {}
    if not isinstance(processes, dict):
        raise UsageError("processes in the config file must be an object")
    try:
        defaults = merge_behaviour(merge_behaviour(DEFAULT_BEHAVIOUR, file.get("defaults")), flag_settings)
        for patch in processes.values():
            merge_behaviour(defaults, patch)
    except ValueError as err:
        raise UsageError(str(err)) from None
    return SimOptions(
        url=",".join(urls),
        machine_keys=machine_keys,
        defaults=defaults,
        processes=processes,
        seed=seed,
        heartbeat_ms=heartbeat_ms,
        journal=journal,
        allow_insecure=allow_insecure,
        ca_file=ca_file,
        keys_on_command_line=keys_on_command_line,
    )


def behaviour_for(options: SimOptions, process_id: str, process_name: str) -> Behaviour:
    """The behaviour for a process: its entry (by id, else by name) over the defaults."""
    return merge_behaviour(options.defaults, options.processes.get(process_id) or options.processes.get(process_name))


HELP = """Usage: python3 -m svc_agent.sim --machine-key svc_mk_… [--machine-key …] [options]

Runs one simulated robot per machine key on the Python SDK: heartbeats, runs jobs, consumes
queues, reaching the platform only through the machine protocol with each machine's key. Same
flags, environment, config file and journal as agent-sim (docs/agent-sim.md).
Environment: SVC_URL (the platform's base URL; several separated by commas are tried in turn),
             AGENT_MACHINE_KEYS (comma-separated), AGENT_MACHINE_KEYS_FILE, AGENT_CONFIG (config file path),
             AGENT_CA_FILE, AGENT_ALLOW_INSECURE=1, AGENT_BUSINESS_FAILURE_RATE (as the flag),
             HTTPS_PROXY / NO_PROXY, LOG_LEVEL.
Machine keys belong in AGENT_MACHINE_KEYS or a file: a key on the command line is readable by every
user of the host (ps), and the robot warns about it.

Options (defaults for every process; the config file can set them per process):
  --url URL[,URL…]         the platform's base URL (instead of SVC_URL); https:// outside this host
  --machine-key-file FILE  machine keys, one a line
  --ca-file FILE           the certificate authority (PEM) of the platform's certificate
  --allow-insecure         allow a plain http:// URL to another host (a key in clear on the network)
  --config FILE            JSON: {"machine_keys": [], "defaults": {}, "processes": {"<name or id>": {}}}
  --duration D             job duration: 250ms, 2s, 100-500ms (uniform)      [500ms-2s]
  --item-duration D        duration of one queue item                        [5-30ms]
  --failure-rate P         probability a job or item fails with an application
                           exception, retried as usual (0..1)                [0]
  --business-failure-rate P  probability a job or item fails with a business
                           exception, never retried (0..1; drawn right after
                           --failure-rate, on the same draw)                  [0]
  --review-rate P          probability an item asks for human review (0..1)   [0]
  --input-rate P           probability a job asks a person for input halfway and waits
                           for the answer (0..1; output_data.input_value)     [0]
  --progress-steps N       progress updates per job                          [4]
  --log-lines N            log lines per job                                 [3]
  --prefetch auto|N        items a consumer holds at once: 1..100, or auto (one
                           at a time for items of 10 ms or more, up to 4 for faster ones) [auto]
  --crash MODE             none | job-start | mid-job | mid-item (SIGKILL itself) [none]
  --crash-after-items N    with --crash mid-item: crash during item N+1       [0]
  --failure-message TEXT   error_message of a simulated application failure
  --seed N                 repeatable random choices
  --heartbeat-ms N         heartbeat more often than the platform asks [the platform's period]
  --journal FILE           append one JSON line per job/item start and end (for tests)"""
