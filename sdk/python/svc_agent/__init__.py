"""
svc_agent: a robot for the automation platform, in Python (asyncio).

A robot holds one credential, its machine key, and reaches the platform over one WebSocket
(docs/agent-protocol.md). ``connect(url, machine_key, on_job, on_item)`` runs the jobs the
platform gives the machine, and consumes the items of the queues the machine consumes.
"""

from .connection import TIMING, Backoff, PlatformError, Timing
from .consumer import ItemHandler, Review
from .robot import AGENT_VERSION, AroundHandler, JobEndHandler, JobHandler, Robot, TraceCarrier, connect
from .run import (
    LOG_CHUNK_BYTES,
    AbortReason,
    BusinessException,
    ExceptionKind,
    JobContext,
    JobEnd,
    JobInfo,
    QueueItem,
    RunAborted,
    is_business_exception,
    log_chunks,
)
from .transport import FROM_ENVIRONMENT, ProxyError, is_loopback_host, url_refusal

__version__ = "0.1.0"

__all__ = [
    "connect",
    "Robot",
    "JobHandler",
    "JobEndHandler",
    "AroundHandler",
    "TraceCarrier",
    "ItemHandler",
    "JobContext",
    "JobInfo",
    "JobEnd",
    "QueueItem",
    "Review",
    "BusinessException",
    "is_business_exception",
    "ExceptionKind",
    "RunAborted",
    "AbortReason",
    "PlatformError",
    "Backoff",
    "Timing",
    "TIMING",
    "AGENT_VERSION",
    "LOG_CHUNK_BYTES",
    "log_chunks",
    "FROM_ENVIRONMENT",
    "ProxyError",
    "is_loopback_host",
    "url_refusal",
]
