"""Retry policy: which failures are tried again, and after how long (seed 003 §5.5).

Only failures that happen before any output was streamed are retried: once text has
reached the caller, a failure is an error, never a silent second answer.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from ...domain import ArkError, ErrorLayer, Retryability

__all__ = ["RetryPolicy", "Timeouts"]


@dataclass(frozen=True)
class Timeouts:
    """Time limits of one ``stream()`` call, in seconds (``None``: no limit).

    Attributes:
        connect: to open the TCP/TLS connection.
        first_output: from sending the request to the first SSE event (keep-alive
            comments do not count).
        idle: longest silence between two events once the stream has started.
        total: the whole call, retries and their waits included.
    """

    connect: float | None = 10.0
    first_output: float | None = 60.0
    idle: float | None = 120.0
    total: float | None = 600.0


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter; ``Retry-After`` is honoured.

    Attributes:
        max_retries: retries after the first attempt (0 disables retrying).
        initial_delay, multiplier, max_delay: backoff ``initial * multiplier**(n-1)``,
            capped at ``max_delay``.
        jitter: fraction of the delay taken off at random (0.25: 75–100 % of it).
        max_retry_after: a ``Retry-After`` longer than this is not waited for; the
            error is raised instead.
        sleep, random: injectable for tests (``sleep(seconds)`` is awaited).

    Example:
        >>> RetryPolicy(max_retries=0).max_retries
        0
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[object]] = field(default=asyncio.sleep, repr=False, compare=False)
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def delay(self, attempt: int, error: ArkError, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``attempt`` (1-based), or ``None`` to give up."""
        if attempt > self.max_retries or error.retryability is Retryability.NEVER:
            return None
        if error.layer not in (ErrorLayer.PROVIDER, ErrorLayer.TRANSPORT):
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after else None
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        return base * (1.0 - self.jitter * self.random())
