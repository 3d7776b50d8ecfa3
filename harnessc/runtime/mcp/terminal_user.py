"""The person at the terminal, as an MCP server's ``McpUser``.

A login: the authorization URL is printed (and opened in a browser where one can be
opened), and a loopback HTTP server on the redirect's port (``http://localhost:PORT
/callback``) catches the browser coming back; the user may also paste the address the
browser was sent to (a browser on another machine). Nothing is read from the terminal
after an answer came: the reader stops. After ``LOGIN_WAIT_S`` without an answer the
login fails.

A question (elicitation): the server's message, then each field of its form with its
description, kind and default (Enter takes the default); or, for a URL question, the
page to open. The user may decline or cancel instead of answering.

Text goes to stderr; answers are read from stdin, with its echo turned on while a
question waits (a one-shot run turns it off).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import sys
import threading
import webbrowser
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

from harnessc.runtime.mcp.user import (
    ElicitationAnswer,
    ElicitationRequest,
    LoginAnswer,
    LoginFailed,
    LoginRequest,
)

__all__ = ["LOGIN_WAIT_S", "LoopbackCallback", "TerminalUser"]

LOGIN_WAIT_S = 600.0
_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>harnessc</title>"
    b"<p>harnessc got the answer of the login. You can close this tab.</p>"
)


class LoopbackCallback:
    """A one-shot HTTP server on 127.0.0.1:PORT that takes the first request to
    ``path`` (the browser's redirect) and gives its full URL."""

    def __init__(self, port: int, path: str = "/callback") -> None:
        self.port = port
        self.path = path
        self.url: asyncio.Future[str] | None = None
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> LoopbackCallback:
        self.url = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10.0)
            while (await asyncio.wait_for(reader.readline(), 10.0)) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.decode("latin-1").split()
            target = parts[1] if len(parts) >= 2 else ""
            if parts[:1] == ["GET"] and urlsplit(target).path == self.path:
                body, status = _PAGE, b"200 OK"
                if self.url is not None and not self.url.done():
                    self.url.set_result(f"http://localhost:{self.port}{target}")
            else:
                body, status = b"not found", b"404 Not Found"
            writer.write(
                b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                b"Content-Length: "
                + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
                + body
            )
            await writer.drain()
        except (TimeoutError, OSError, UnicodeError):
            pass
        finally:
            writer.close()


class TerminalUser:
    """Asks the person at this terminal (see the module doc)."""

    def __init__(
        self,
        *,
        open_browser: bool = True,
        wait_s: float = LOGIN_WAIT_S,
        opener: Callable[[str], bool] | None = None,
    ) -> None:
        """``opener``: opens a URL in a browser, True when it did (default: the user's
        browser, where one is known)."""
        self.open_browser = open_browser
        self.wait_s = wait_s
        self.opener = opener or _open
        self._lock = asyncio.Lock()

    async def login(self, request: LoginRequest) -> LoginAnswer:
        async with self._lock:
            return await self._login(request)

    async def _login(self, request: LoginRequest) -> LoginAnswer:
        parts = urlsplit(request.redirect_uri)
        loopback = parts.hostname in ("localhost", "127.0.0.1") and parts.port is not None
        callback: LoopbackCallback | None = None
        async with contextlib.AsyncExitStack() as stack:
            if loopback:
                assert parts.port is not None
                try:
                    callback = await stack.enter_async_context(
                        LoopbackCallback(parts.port, parts.path or "/callback")
                    )
                except OSError:
                    callback = None  # the port is taken: the user pastes the address
            why = f" ({request.reason})" if request.reason else ""
            _say(
                f"\nmcp server {request.server!r} needs a login{why}.\n"
                f"Open this address in a browser and log in:\n\n  {request.url}\n"
            )
            if self.open_browser and await asyncio.to_thread(self.opener, request.url):
                _say("(a browser was opened)\n")
            if callback is not None:
                _say(
                    "Waiting for the browser to come back… (or paste the address it was "
                    "sent to, and press Enter)\n"
                )
            else:
                _say("Then paste the address the browser was sent to, and press Enter:\n")
            stop = threading.Event()
            pasted = asyncio.ensure_future(asyncio.to_thread(_read_line, "> ", stop))
            waiting: set[asyncio.Future[Any]] = {pasted}
            if callback is not None and callback.url is not None:
                waiting.add(callback.url)
            deadline = asyncio.get_running_loop().time() + self.wait_s
            try:
                while waiting:
                    left = deadline - asyncio.get_running_loop().time()
                    if left <= 0:
                        break
                    done, waiting = await asyncio.wait(
                        waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED
                    )
                    for future in done:
                        answer = future.result()
                        if answer:
                            _say("Login answer received.\n")
                            return LoginAnswer(answer)
            finally:
                stop.set()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(pasted, 2.0)
            raise LoginFailed(
                f"mcp server {request.server!r}: no answer to the login within {self.wait_s:g} s"
            )

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        async with self._lock:
            return await asyncio.to_thread(_ask, request, self.open_browser, self.opener)


def _say(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _open(url: str) -> bool:
    """Open ``url`` in the user's browser where one is known (never a text browser in
    this terminal); False when none could be."""
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return False
    if type(browser).__name__ in ("GenericBrowser",) and not getattr(browser, "background", True):
        return False  # a console browser would take over this terminal
    try:
        return bool(browser.open(url))
    except Exception:
        return False


def _read_line(prompt: str, stop: threading.Event | None = None) -> str | None:
    """One line typed at the terminal (echo on meanwhile); None when ``stop`` is set
    first, or at the end of input."""
    stream = sys.stdin
    if stream is None:
        return None
    _say(prompt)
    with _echo_on(stream):
        while stop is None or not stop.is_set():
            try:
                ready, _, _ = select.select([stream], [], [], 0.2)
            except (OSError, ValueError):
                return None
            if ready:
                line = stream.readline()
                return line.strip() if line else None
    return None


@contextlib.contextmanager
def _echo_on(stream: Any) -> Any:
    try:
        import termios

        fd = stream.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError, AttributeError):
        yield
        return
    changed = list(saved)
    changed[3] = changed[3] | termios.ECHO | termios.ICANON
    try:
        termios.tcsetattr(fd, termios.TCSANOW, changed)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


Action = Literal["accept", "decline", "cancel"]


def _choice(prompt: str) -> Action:
    while True:
        line = _read_line(prompt)
        if line is None:
            return "cancel"
        word = line.lower()
        if word in ("", "y", "yes", "a", "accept"):
            return "accept"
        if word in ("n", "no", "d", "decline"):
            return "decline"
        if word in ("c", "cancel"):
            return "cancel"
        _say("Answer y (yes), d (decline) or c (cancel).\n")


def _ask(
    request: ElicitationRequest, open_browser: bool, opener: Callable[[str], bool]
) -> ElicitationAnswer:
    where = f"mcp server {request.server!r}"
    if request.mode == "url":
        _say(f"\n{where} asks you to open a page:\n  {request.message}\n\n  {request.url}\n")
        action = _choice("Open it? [Y]es / [d]ecline / [c]ancel: ")
        if action == "accept" and open_browser and request.url and opener(request.url):
            _say("(a browser was opened)\n")
        return ElicitationAnswer(action)
    _say(f"\n{where} asks: {request.message}\n")
    action = _choice("Answer? [Y]es / [d]ecline / [c]ancel: ")
    if action != "accept":
        return ElicitationAnswer(action)
    schema = request.schema or {}
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    for name, field in (schema.get("properties") or {}).items():
        value = _field(name, field if isinstance(field, dict) else {}, name in required)
        if value is _CANCEL:
            return ElicitationAnswer("cancel")
        if value is not _SKIP:
            content[name] = value
    return ElicitationAnswer("accept", content)


_SKIP = object()
_CANCEL = object()


def _field(name: str, field: dict[str, Any], required: bool) -> Any:
    kind = field.get("type", "string")
    choices = field.get("enum") or [
        option.get("const") for option in field.get("oneOf") or () if isinstance(option, dict)
    ]
    label = field.get("title") or name
    hint = f" - {field['description']}" if field.get("description") else ""
    default = field.get("default")
    shown = f" [{default}]" if default is not None else ("" if required else " [skip]")
    if choices:
        _say(f"{label}{hint}: " + ", ".join(f"{i + 1}) {c}" for i, c in enumerate(choices)) + "\n")
    while True:
        line = _read_line(f"{label}{'' if choices else hint} ({kind}){shown}: ")
        if line is None:
            return _CANCEL
        if line == "":
            if default is not None or not required:
                return _SKIP  # the client fills the default in
            _say("This answer is required.\n")
            continue
        try:
            return _parse(line, kind, choices, field)
        except ValueError as exc:
            _say(f"{exc}\n")


def _parse(text: str, kind: Any, choices: list[Any], field: dict[str, Any]) -> Any:
    if choices:
        if text.isdigit() and 1 <= int(text) <= len(choices):
            return choices[int(text) - 1]
        if text in [str(c) for c in choices]:
            return next(c for c in choices if str(c) == text)
        raise ValueError("Give the number or the value of one of the choices.")
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true", "1"):
            return True
        if text.lower() in ("n", "no", "false", "0"):
            return False
        raise ValueError("Answer y or n.")
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("Give a whole number.") from None
    if kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError("Give a number.") from None
    if kind == "array":
        items = field.get("items") or {}
        allowed = items.get("enum") or [
            o.get("const") for o in items.get("anyOf") or () if isinstance(o, dict)
        ]
        values = [part.strip() for part in text.split(",") if part.strip()]
        if allowed and any(v not in [str(a) for a in allowed] for v in values):
            raise ValueError(f"Give values among: {', '.join(str(a) for a in allowed)}.")
        return values
    return text
