"""The process inside a sandbox with network hosts: its only way out (see ``proxy.py``).

Started by bubblewrap as ``python -I -S bridge.py SOCKET PORT -- PROGRAM ARGS...``
(standard library only, no harnessc import). The sandbox's network namespace has
nothing but its own loopback; this process listens on ``127.0.0.1:PORT`` there (the
``HTTP_PROXY`` the program is given), passes every connection to the agent's proxy
through the unix socket ``SOCKET`` (mounted into the sandbox), runs the program, and
exits the way it did (same code, same signal).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading

__all__ = ["main"]

_CHUNK = 64 * 1024


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(_CHUNK):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass


def _relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
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
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    child = os.fork()
    if child == 0:
        listener.close()
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"cannot run {command[0]}: {exc.strerror or exc}\n".encode())
        os._exit(127)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except InterruptedError:
            continue
        _exit_like(status)


if __name__ == "__main__":
    main(sys.argv)
