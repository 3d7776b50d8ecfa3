"""The sandbox's tests: a world to escape from and two servers on loopback.

The world is a folder outside /tmp (the sandbox gives programs a private /tmp, so files
there would be out of reach whatever the sandbox did to the rest): a workspace with a
``.env`` holding a secret, a hard link to it, a folder of secrets, a git repository and
a tar archive; a folder outside the workspace whose files must not change; a home
folder with an SSH key and harnessc's data folder. ``HOME`` and ``XDG_DATA_HOME`` point
at it while a test runs.

The servers: "allowed" is the host a policy names, "outside" is everything else; each
counts the requests it was sent. Every test here skips, saying why, where this machine
cannot make a sandbox (and fails under CI, which installs bubblewrap).
"""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harnessc.runtime.sandbox import SandboxPolicy
from tests.sandboxing import require_sandbox

SECRET = "sk-live-0123456789abcdefSECRET"
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-test-key"
SESSION_TEXT = '{"type":"session","secret":"recorded-conversation"}'


@pytest.fixture(autouse=True)
def _needs_a_sandbox() -> None:
    require_sandbox()


class Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str]
    body: bytes

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class Server:
    port: int
    hits: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """(allowed, outside), on 127.0.0.1."""
    running: list[http.server.ThreadingHTTPServer] = []
    made: list[Server] = []
    for body in (b"hello from the allowed host\n", b"OUTSIDE-LEAK\n"):
        hits: list[str] = []
        handler = type("H", (Counter,), {"hits": hits, "body": body})
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        running.append(httpd)
        made.append(Server(httpd.server_address[1], hits))
    try:
        yield made[0], made[1]
    finally:
        for httpd in running:
            httpd.shutdown()
            httpd.server_close()


@dataclass
class World:
    base: Path
    ws: Path
    outside: Path
    home: Path

    def snapshot(self) -> dict[str, str]:
        """Every file outside the workspace (and the private /tmp), by content hash."""
        found: dict[str, str] = {}
        for root in (self.outside, self.home):
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                elif path.is_dir():
                    found[str(path)] = "dir"
        return found

    def policy(self, *hosts: str) -> SandboxPolicy:
        return SandboxPolicy(
            "on", unreadable=["./.env", "./secrets", "./conf/secret.key"], network=hosts
        )


def _base() -> Path:
    for parent in ("/var/tmp", os.path.expanduser("~")):
        if os.path.isdir(parent) and os.access(parent, os.W_OK) and not parent.startswith("/tmp"):
            return Path(tempfile.mkdtemp(prefix="harnessc-sandbox-test-", dir=parent))
    pytest.skip("no writable folder outside /tmp for the sandbox's world")


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    base = _base()
    ws, outside, home = base / "ws", base / "outside", base / "home"
    try:
        for folder in (ws / "secrets", ws / "sub", ws / "conf", outside, home / ".ssh"):
            folder.mkdir(parents=True)
        (ws / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
        os.link(ws / ".env", ws / "env-copy")  # a hard link made before the run
        (ws / "secrets" / "key").write_text(f"KEY {SECRET}\n")
        (ws / "conf" / "secret.key").write_text(f"CONF {SECRET}\n")
        (ws / "f").write_text("one\ntwo\n")
        (ws / "sub" / "notes.txt").write_text("notes\n")
        (outside / "f").write_text("keep me\n")
        (outside / "keep.txt").write_text("keep me too\n")
        (home / ".ssh" / "id_rsa").write_text(SSH_KEY + "\n")
        data = home / ".local" / "share" / "harnessc" / "projects" / "p"
        data.mkdir(parents=True)
        (data / "session.jsonl").write_text(SESSION_TEXT + "\n")
        subprocess.run(["tar", "cf", "t.tar", "f"], cwd=ws, check=True)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(ws)]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "f"], check=True)
        subprocess.run([*git, "commit", "-qm", "one"], check=True)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        yield World(base, ws, outside, home)
    finally:
        for path in base.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)
