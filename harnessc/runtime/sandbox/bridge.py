"""The process inside a sandbox with network hosts: its only way out (see ``proxy.py``).

Started by bubblewrap as ``python -I -S bridge.py SOCKET PORT -- PROGRAM ARGS...``
(no harnessc import, and only the interpreter's built-in modules: ``socket``,
``threading`` and ``signal`` would double its start-up). The sandbox's network namespace
has nothing but its own loopback; this process listens on ``127.0.0.1:PORT`` there (the
``HTTP_PROXY`` the program is given), passes every connection to the agent's proxy
through the unix socket ``SOCKET`` (mounted into the sandbox), runs the program, and
exits the way it did (same code, same signal).
"""

from __future__ import annotations

import _signal
import _socket
import _thread
import os
import sys

__all__ = ["main"]

_CHUNK = 64 * 1024
_SHUT_RD, _SHUT_WR = 0, 1


def _pipe(source: _socket.socket, target: _socket.socket, done: object) -> None:
    try:
        while data := source.recv(_CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((target, _SHUT_WR), (source, _SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass
        if done is not None:
            done.release()  # type: ignore[attr-defined]


def _relay(fd: int, path: str) -> None:
    client = _socket.socket(fileno=fd)
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    _thread.start_new_thread(_pipe, (upstream, client, back))
    _pipe(client, upstream, None)
    back.acquire()  # the other direction is done too
    client.close()
    upstream.close()


def _serve(listener: _socket.socket, path: str) -> None:
    while True:
        try:
            fd, _ = listener._accept()  # type: ignore[attr-defined]  # (fd, address)
        except OSError:
            return
        _thread.start_new_thread(_relay, (fd, path))


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            _signal.signal(sig, _signal.SIG_DFL)
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str]) -> None:
    if len(argv) < 5 or argv[3] != "--":
        sys.stderr.write("usage: bridge.py SOCKET PORT -- PROGRAM [ARGS...]\n")
        os._exit(2)
    path, port, command = argv[1], int(argv[2]), argv[4:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    child = os.fork()
    if child == 0:
        listener.close()
        for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):
            _signal.signal(sig, _signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"cannot run {command[0]}: {exc.strerror or exc}\n".encode())
        os._exit(127)
    _thread.start_new_thread(_serve, (listener, path))
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except InterruptedError:
            continue
        _exit_like(status)


if __name__ == "__main__":
    main(sys.argv)
