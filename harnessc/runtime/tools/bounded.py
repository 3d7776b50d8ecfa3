"""Running a file tool's blocking work with a timeout and an abort.

The work runs in a daemon thread and gets a ``stop()`` callable it checks between
steps (lines, files). The tool call returns as soon as the work finishes, the run is
aborted, or the timeout passes; in the last two cases ``stop()`` turns true so the
thread winds down on its own (and, being a daemon, never keeps the process alive).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools.base import ToolExecute, ToolResult, ToolUpdate, error_result

__all__ = ["DEFAULT_TIMEOUT_S", "Stop", "bounded", "run_bounded"]

DEFAULT_TIMEOUT_S = 60.0

Stop = Callable[[], bool]


def _settle(future: asyncio.Future[ToolResult], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


async def run_bounded(
    name: str, work: Callable[[Stop], ToolResult], signal: AbortSignal, timeout_s: float | None
) -> ToolResult:
    """``work(stop)`` in a daemon thread, bounded by ``timeout_s`` and ``signal``."""
    if signal.aborted:
        return error_result(f"{name} not run: the run was aborted")
    loop = asyncio.get_running_loop()
    future: asyncio.Future[ToolResult] = loop.create_future()
    stopped = threading.Event()

    def target() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = work(stopped.is_set)
        except BaseException as exc:  # handed to the awaiting task
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
            loop.call_soon_threadsafe(_settle, future, result, error)

    threading.Thread(target=target, name=f"harnessc-{name}", daemon=True).start()
    aborter: asyncio.Future[Any] = asyncio.ensure_future(signal.wait())
    waiting: set[asyncio.Future[Any]] = {future, aborter}
    try:
        done, _ = await asyncio.wait(
            waiting, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    except asyncio.CancelledError:
        stopped.set()
        raise
    finally:
        aborter.cancel()
    if future in done:
        return future.result()
    stopped.set()
    future.cancel()
    if aborter in done:
        return error_result(f"{name} aborted")
    return error_result(
        f"{name} timed out after {timeout_s:g} s and was stopped; "
        "narrow the path, pattern or limit and try again"
    )


def bounded(
    name: str,
    function: Callable[[dict[str, Any], Any, Stop], ToolResult],
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
) -> ToolExecute:
    """An execute function running ``function(params, context, stop)`` bounded."""

    async def run(
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        return await run_bounded(
            name, lambda stop: function(params, context, stop), signal, timeout_s
        )

    return run
