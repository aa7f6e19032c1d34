"""
How a simulated robot behaves for one process: durations, failures, reviews, progress and log
lines, resource metrics and crashes, configured per process (docs/agent-sim.md). A job's
``input_data._sim`` or an item's ``data._sim`` forces the outcome of that one run.
"""

from __future__ import annotations

import copy
import math
import random as _random
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .formats import compact_json as _json

__all__ = [
    "Behaviour",
    "DEFAULT_BEHAVIOUR",
    "MAX_TAKE",
    "parse_distribution",
    "merge_behaviour",
    "create_random",
    "sample",
    "MetricsProfile",
    "metrics_profile",
    "metrics_at",
    "directive_of",
    "BUSINESS_FAILURE_MESSAGE",
    "draw_end",
    "forced_exception",
    "js_round",
]

#: Most items one take may ask for (the platform's bound).
MAX_TAKE = 100

CRASH_MODES = ("none", "job-start", "mid-job", "mid-item")


@dataclass
class Behaviour:
    """The settings of one process (docs/agent-sim.md, "Config file")."""

    duration: dict[str, Any] = field(default_factory=lambda: {"dist": "uniform", "min_ms": 500, "max_ms": 2000})
    item_duration: dict[str, Any] = field(default_factory=lambda: {"dist": "uniform", "min_ms": 5, "max_ms": 30})
    #: probability that a job or an item fails with an application exception (retried as usual)
    failure_rate: float = 0.0
    #: probability that a job or an item fails with a business exception (never retried): drawn on
    #: the same draw as failure_rate, right after it (draw_end)
    business_failure_rate: float = 0.0
    review_rate: float = 0.0
    progress_steps: int = 4
    log_lines: int = 3
    #: items a consumer holds at once: 1..100, or "auto" (see prefetch.py)
    prefetch: int | str = "auto"
    metrics: dict[str, tuple[float, float]] = field(default_factory=lambda: {
        "cpu_percent": (5, 60),
        "ram_mb": (80, 400),
        "disk_read_mb": (0, 20),
        "disk_write_mb": (0, 10),
    })
    crash: str = "none"
    crash_after_items: int = 0
    failure_message: str = "Error simulado del robot"
    output: dict[str, Any] = field(default_factory=dict)
    input_rate: float = 0.0
    input_prompt: str = "¿Continuar con el proceso?"
    input_options: dict[str, Any] = field(default_factory=lambda: {"choices": ["continuar", "cancelar"]})


DEFAULT_BEHAVIOUR = Behaviour()

#: The error_message of a simulated business failure: fixed, and unlike ``failure_message``'s, so
#: that a person tells the two kinds apart in the console at a glance (a directive's error_message wins).
BUSINESS_FAILURE_MESSAGE = "Error de negocio simulado: los datos no son válidos"


def draw_end(b: Behaviour, r: float, with_review: bool) -> str:
    """
    How a job (``with_review`` False) or an item ends, from one draw ``r`` in [0, 1):
    ``application``, ``business``, ``review`` or ``completed``. The bands are laid end to end from
    0, failure_rate first, then business_failure_rate, then (an item) review_rate. One draw whatever
    the rates, where the failure was always drawn: with business_failure_rate 0 every seed decides
    what it did before. agent-sim's drawEnd (apps/agent-sim/src/behaviour.ts), to the letter.
    """
    if r < b.failure_rate:
        return "application"
    if r < b.failure_rate + b.business_failure_rate:
        return "business"
    if with_review and r < b.failure_rate + b.business_failure_rate + b.review_rate:
        return "review"
    return "completed"


def forced_exception(d: dict[str, Any]) -> str:
    """The kind of a failure forced by a directive (``_sim.exception: "business"``; anything else is application)."""
    return "business" if d.get("exception") == "business" else "application"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")
_UNIT_AT_END = re.compile(r"(ms|s|m)\s*$")


def _ms(text: str) -> float:
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f'not a duration: "{text}" (use 250ms, 2s, 1m or a range like 100-500ms)')
    n = float(m.group(1))
    return n * 1000 if m.group(2) == "s" else n * 60_000 if m.group(2) == "m" else n


def parse_distribution(value: Any) -> dict[str, Any]:
    """``"250ms"``, ``"2s"``, ``"100-500ms"``, ``"1s-3s"``, a number of ms, or ``{"dist": …}``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"dist": "fixed", "ms": value}
    if isinstance(value, str):
        r = re.match(r"^(.+?)-(.+)$", value)
        if r:
            unit_match = _UNIT_AT_END.search(r.group(2))
            unit = unit_match.group(1) if unit_match else "ms"
            lo = r.group(1) if _UNIT_AT_END.search(r.group(1)) else r.group(1) + unit
            return {"dist": "uniform", "min_ms": _ms(lo), "max_ms": _ms(r.group(2))}
        return {"dist": "fixed", "ms": _ms(value)}
    if isinstance(value, dict) and value.get("dist") in ("fixed", "uniform", "normal", "exponential"):
        return dict(value)
    raise ValueError(f"not a duration distribution: {_json(value)}")


def create_random(seed: int | None) -> Callable[[], float]:
    """A generator of floats in [0, 1); with a seed, the same sequence as agent-sim's (mulberry32)."""
    if seed is None:
        return _random.random
    state = seed & 0xFFFFFFFF

    def imul(a: int, b: int) -> int:
        return (a * b) & 0xFFFFFFFF

    def next_value() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = state
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return next_value


def js_round(n: float) -> int:
    """Rounds half up, as agent-sim does (Python's round() rounds half to even)."""
    return math.floor(n + 0.5)


def sample(d: dict[str, Any], random: Callable[[], float]) -> float:
    """One draw of a distribution, in ms (never negative)."""
    kind = d["dist"]
    if kind == "fixed":
        return max(0.0, float(d["ms"]))
    if kind == "uniform":
        return max(0.0, float(d["min_ms"]) + random() * (float(d["max_ms"]) - float(d["min_ms"])))
    if kind == "normal":
        u = max(random(), 1e-12)
        z = math.sqrt(-2 * math.log(u)) * math.cos(2 * math.pi * random())
        return max(0.0, float(d["mean_ms"]) + z * float(d["stddev_ms"]))
    return -math.log(max(random(), 1e-12)) * float(d["mean_ms"])


@dataclass(frozen=True)
class MetricsProfile:
    """One run's simulated resource use, drawn once so its metrics stay consistent while it runs."""

    cpu_avg: float
    cpu_peak: float
    ram_avg: float
    ram_peak: float
    disk_read_mb: float
    disk_write_mb: float


def _between(r: tuple[float, float], random: Callable[[], float]) -> float:
    return r[0] + random() * (r[1] - r[0])


def metrics_profile(b: Behaviour, random: Callable[[], float]) -> MetricsProfile:
    """The resource use of one run."""
    cpu = _between(b.metrics["cpu_percent"], random)
    ram = _between(b.metrics["ram_mb"], random)
    return MetricsProfile(
        cpu_avg=cpu,
        cpu_peak=min(100.0, cpu * (1 + random() * 0.6)),
        ram_avg=ram,
        ram_peak=ram * (1 + random() * 0.3),
        disk_read_mb=_between(b.metrics["disk_read_mb"], random),
        disk_write_mb=_between(b.metrics["disk_write_mb"], random),
    )


def metrics_at(p: MetricsProfile, elapsed_ms: float, total_ms: float | None = None) -> dict[str, Any]:
    """The platform's ResourceMetrics after ``elapsed_ms`` of a run expected to last ``total_ms``."""
    total = elapsed_ms if total_ms is None else total_ms
    share = min(1.0, elapsed_ms / total) if total > 0 else 1.0

    def r(n: float) -> float:
        return js_round(n * 100) / 100

    return {
        "cpu_percent_avg": r(p.cpu_avg),
        "cpu_percent_peak": r(p.cpu_peak),
        "ram_mb_avg": r(p.ram_avg),
        "ram_mb_peak": r(p.ram_peak),
        "disk_read_mb": r(p.disk_read_mb * share),
        "disk_write_mb": r(p.disk_write_mb * share),
        "sample_count": max(1, js_round(elapsed_ms / 1000)),
        "duration_seconds": r(elapsed_ms / 1000),
    }


def directive_of(payload: Any) -> dict[str, Any]:
    """The ``_sim`` directive of a job's input or an item's data ({} when none)."""
    raw = payload.get("_sim") if isinstance(payload, dict) else None
    return raw if isinstance(raw, dict) else {}


#: Text that is a plain decimal number, as agent-sim reads one (ASCII digits and blanks only: the
#: two languages' \d and \s differ beyond them)
_DECIMAL = re.compile(r"^[ \t\r\n]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\r\n]*$")


def _strict_number(v: Any) -> float:
    """A JSON number, or text that is a plain decimal number (not '1_0', which float() takes); NaN else."""
    try:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        return float(v) if isinstance(v, str) and _DECIMAL.match(v) else math.nan
    except OverflowError:  # an integer too large for a float: as far out of range as agent-sim's Infinity
        return math.inf


def _probability(name: str, v: Any) -> float:
    n = _strict_number(v)
    if not math.isfinite(n) or n < 0 or n > 1:
        raise ValueError(f"{name} must be between 0 and 1")
    return n


def _non_negative_int(name: str, v: Any) -> int:
    try:
        n = float(v)
    except (TypeError, ValueError):
        n = math.nan
    if not math.isfinite(n) or n != int(n) or n < 0 or isinstance(v, bool):
        raise ValueError(f"{name} must be a non-negative integer")
    return int(n)


def _prefetch(v: Any) -> int | str:
    if v == "auto":
        return "auto"
    try:
        n = float(v)
    except (TypeError, ValueError):
        n = math.nan
    if not math.isfinite(n) or n != int(n) or n < 1 or n > MAX_TAKE or isinstance(v, bool):
        raise ValueError(f"prefetch must be auto or an integer from 1 to {MAX_TAKE}")
    return int(n)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def merge_behaviour(base: Behaviour, patch: dict[str, Any] | None) -> Behaviour:
    """``base`` with the settings of ``patch`` over it (durations parsed, values checked)."""
    # as agent-sim reads it: no patch, or a false scalar, changes nothing
    if patch is None or (not isinstance(patch, (dict, list)) and not patch):
        return base
    if not isinstance(patch, dict):
        raise ValueError(f"a behaviour must be an object, not {_json(patch)}")
    out = copy.deepcopy(base)
    for k, v in patch.items():
        if k in ("duration", "item_duration"):
            setattr(out, k, parse_distribution(v))
        elif k in ("failure_rate", "business_failure_rate", "review_rate", "input_rate"):
            setattr(out, k, _probability(k, v))
        elif k in ("progress_steps", "log_lines", "crash_after_items"):
            setattr(out, k, _non_negative_int(k, v))
        elif k == "prefetch":
            out.prefetch = _prefetch(v)
        elif k == "crash":
            if v not in CRASH_MODES:
                raise ValueError("crash must be none, job-start, mid-job or mid-item")
            out.crash = v
        elif k == "failure_message":
            out.failure_message = str(v)
        elif k == "output":
            if v is not None and not isinstance(v, dict):
                raise ValueError("output must be an object")
            out.output = dict(v or {})
        elif k == "input_prompt":
            out.input_prompt = str(v)
        elif k == "input_options":
            if not isinstance(v, dict):
                raise ValueError('input_options must be {"choices": [...]} or {"schema": {...}}')
            out.input_options = v
        elif k == "metrics":
            if v is not None and not isinstance(v, dict):
                raise ValueError("metrics must be an object of ranges")
            for mk, mv in (v or {}).items():
                if mk not in out.metrics:
                    raise ValueError(f"unknown metric {mk}")
                pair = mv if isinstance(mv, list) else [mv, mv]
                if len(pair) != 2 or not all(_finite(x) for x in pair):
                    raise ValueError(f"metrics.{mk} must be a number or [min, max]")
                out.metrics[mk] = (float(pair[0]), float(pair[1]))
        else:
            raise ValueError(f'unknown behaviour setting "{k}"')
    return out
