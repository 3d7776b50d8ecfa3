"""``python: module:function`` hooks: a user function on any hook moment.

The function receives the moment's event (and the harness, when it takes two
positional arguments) and returns the moment's result type, a dict with the same keys,
or None. Async functions are awaited; sync ones run in a daemon worker thread, so a
hook that hangs cannot freeze the event loop: after ``timeout_s`` the call counts as
failed (the thread is left to finish on its own). A failure, a timeout or a result of
the wrong type is reported as an error event and ignored; at ``tool_call`` the harness
then blocks the call (fail closed).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.hooks import HookSpec, accepts_context, canonical_hook_name
from harnessc.runtime.extensions.protocol import HookProtocolError, HookTimeoutError, check_result

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["DEFAULT_PYTHON_HOOK_TIMEOUT_S", "HookTimeoutError", "PythonHook", "python_hook"]

DEFAULT_PYTHON_HOOK_TIMEOUT_S = 60.0


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


def _contained(exc: BaseException, label: str) -> HookProtocolError:
    """A SystemExit or KeyboardInterrupt raised by hook code, as an ordinary hook failure."""
    detail = f"{type(exc).__name__}({exc})" if str(exc) else type(exc).__name__
    return HookProtocolError(f"{label} raised {detail}")


async def run_in_daemon_thread(
    func: Callable[..., Any], args: tuple[Any, ...], timeout_s: float, label: str
) -> Any:
    """Call ``func(*args)`` in a fresh daemon thread; HookTimeoutError after ``timeout_s``.

    Not the default executor: a thread that never returns would make ``asyncio.run``
    wait for it at shutdown.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def target() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = func(*args)
        except Exception as exc:  # handed to the loop, never lost
            error = exc
        except BaseException as exc:  # SystemExit / KeyboardInterrupt: a failed hook, not an exit
            error = _contained(exc, label)
        try:
            loop.call_soon_threadsafe(_settle, future, value, error)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=target, name=f"hook {label}", daemon=True).start()
    try:
        return await asyncio.wait_for(future, timeout_s)
    except TimeoutError:
        raise HookTimeoutError(
            f"{label} did not return within {timeout_s:g} s (left running in its thread)"
        ) from None


class PythonHook:
    """The handler behind ``python_hook``: calls the function, checks what it returns."""

    def __init__(
        self, moment: str, target: str, func: Callable[..., Any], timeout_s: float
    ) -> None:
        self.moment = canonical_hook_name(moment)
        self.target = target
        self.func = func
        self.timeout_s = timeout_s
        self.label = f"python hook {target}"
        self._takes_harness = accepts_context(func)

    async def _guarded(self, awaitable: Any) -> Any:
        # Caught inside the coroutine: a SystemExit that reached the task would stop the loop.
        try:
            return await awaitable
        except SystemExit as exc:  # sys.exit() in a hook fails the hook, not the agent
            raise _contained(exc, self.label) from None

    def __repr__(self) -> str:
        return f"PythonHook({self.moment!r}, {self.target!r}, timeout_s={self.timeout_s})"

    async def __call__(self, event: Any, harness: HarnessContext) -> Any:
        args = (event, harness) if self._takes_harness else (event,)
        if inspect.iscoroutinefunction(self.func):
            result = await self._await(self.func(*args))
        else:
            result = await run_in_daemon_thread(self.func, args, self.timeout_s, self.label)
            if inspect.isawaitable(result):
                result = await self._await(result)
        check_result(self.moment, result, self.label)
        return result

    async def _await(self, awaitable: Any) -> Any:
        try:
            return await asyncio.wait_for(self._guarded(awaitable), self.timeout_s)
        except TimeoutError:
            raise HookTimeoutError(
                f"{self.label} did not return within {self.timeout_s:g} s"
            ) from None


def python_hook(
    moment: str,
    target: str | Callable[..., Any],
    base_dir: str | Path | None = None,
    timeout_s: float | None = None,
    *,
    matcher: str | None = None,
) -> HookSpec:
    """A HookSpec calling ``target`` ("module:function", or the function itself).

    The module is imported now (with ``base_dir`` first on ``sys.path``), so a missing
    module or function fails when the options are built. ``timeout_s`` defaults to 60.
    ``matcher`` (tool moments) is a regex over the whole tool name.
    """
    timeout = DEFAULT_PYTHON_HOOK_TIMEOUT_S if timeout_s is None else float(timeout_s)
    if timeout <= 0:
        raise ValueError(f"python hook timeout_s must be positive (got {timeout_s})")
    if isinstance(target, str):
        from harnessc.runtime.tools.pyfunc import import_object

        func = import_object(target, base_dir)
        name = target
    else:
        func = target
        name = f"{getattr(func, '__module__', '?')}:{getattr(func, '__qualname__', repr(func))}"
    if not callable(func):
        raise TypeError(f"python hook {name!r} is not callable ({type(func).__name__})")
    handler = PythonHook(moment, name, func, timeout)
    return HookSpec(moment=moment, handler=handler, matcher=matcher, name=f"python:{name}")
