"""Retry policy of provider requests: which failures, how long to wait."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from harnessc.runtime.core.options import RetryOptions
from harnessc.runtime.core.signal import AbortSignal

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "backoff_delay_ms",
    "is_retryable_status",
    "parse_retry_after_ms",
    "retry_delay_ms",
    "sleep_unless_aborted",
]

DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_RETRY_DELAY_MS = 60_000


def is_retryable_status(status: int) -> bool:
    """408 timeout, 409 conflict, 429 rate limit and every 5xx but 501 (Not
    Implemented: the server will never do it) may succeed later."""
    return status in (408, 409, 429) or (500 <= status <= 599 and status != 501)


# The longest wait a server's ask is read as (a day); the options cap it further.
_LONGEST_ASK_MS = 86_400_000


def _ask_ms(value: float) -> int | None:
    """``value`` milliseconds as a wait: negative is none, infinite or past a day is a
    day (the options cap it further), NaN is no ask."""
    if math.isnan(value):
        return None
    return int(max(0.0, min(value, _LONGEST_ASK_MS)))


def _number(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


def parse_retry_after_ms(headers: Mapping[str, str], now: float | None = None) -> int | None:
    """The wait a response asks for: ``retry-after-ms``, or ``Retry-After`` in
    seconds or as an HTTP date. ``headers`` must have lower-case keys or be case-blind."""
    raw_ms = headers.get("retry-after-ms")
    number = _number(raw_ms.strip()) if raw_ms else None
    if number is not None and not math.isnan(number):
        return _ask_ms(number)
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    number = _number(raw)
    if number is not None:
        return _ask_ms(number * 1000)
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, OverflowError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    try:
        seconds = when.timestamp() - current
    except (OverflowError, ValueError, OSError):
        return None
    return _ask_ms(seconds * 1000)


def backoff_delay_ms(attempt: int, options: RetryOptions) -> int:
    """Exponential backoff for the 1-based ``attempt`` that failed, with jitter."""
    base = options.base_delay_ms * (options.multiplier ** max(0, attempt - 1))
    jitter = max(0.0, min(1.0, options.jitter))
    if jitter:
        base *= random.uniform(1.0 - jitter, 1.0 + jitter)
    return max(0, int(base))


def retry_delay_ms(
    attempt: int,
    options: RetryOptions,
    retry_after_ms: int | None,
    max_delay_ms: int,
) -> int:
    """The wait before the next attempt: the server's ask, else backoff; capped."""
    delay = retry_after_ms if retry_after_ms is not None else backoff_delay_ms(attempt, options)
    return max(0, min(delay, max_delay_ms))


async def sleep_unless_aborted(signal: AbortSignal, delay_ms: int) -> bool:
    """Sleep ``delay_ms``; returns False at once if ``signal`` aborts meanwhile."""
    if signal.aborted:
        return False
    if delay_ms <= 0:
        return True
    try:
        await asyncio.wait_for(signal.wait(), timeout=delay_ms / 1000)
    except TimeoutError:
        return True
    return False
