"""The OAuth tokens of MCP servers, kept per user: one file per server and client.

A login is the user's, not a project's: the files live in the per-user data folder,
``$XDG_DATA_HOME/harnessc/mcp-auth/`` (``~/.local/share/harnessc/mcp-auth/``), a
folder only its owner may enter (0700), each file only its owner may read (0600),
written whole (a temporary file renamed over the old one). A file that other users
could read, or that another user owns, is not used (the next login replaces it). The
file of a server is named after its host and a hash of its URL, the grant and the
client id, so two servers, or two clients of one server, never share tokens.

A file holds the tokens (with the moment the access token expires, so a token read
back after a restart is refreshed before it is sent), and the client registration
made with the server's authorization server (dynamic registration or a client ID
metadata document). Every token, refresh token and client secret read or written is
registered as a secret value (``support.secrets``): the runtime's redaction then
removes it from tool results, traces and logs.

``TokenFile`` is the SDK's ``TokenStorage`` (duck-typed: this module never imports the
SDK at import time).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harnessc.runtime.support.data_folder import data_home, make_folder
from harnessc.runtime.support.secrets import register_secret_values

__all__ = ["TOKEN_FOLDER", "TokenFile", "token_folder"]

TOKEN_FOLDER = "mcp-auth"


def token_folder() -> Path:
    """``$XDG_DATA_HOME/harnessc/mcp-auth`` (not created here)."""
    return data_home() / TOKEN_FOLDER


def _file_name(url: str, grant: str, client_id: str | None) -> str:
    host = urlsplit(url).hostname or "server"
    readable = re.sub(r"[^A-Za-z0-9.-]+", "-", host).strip("-.")[:60] or "server"
    digest = hashlib.sha256(f"{url}\n{grant}\n{client_id or ''}".encode()).hexdigest()[:16]
    return f"{readable}-{digest}.json"


class TokenFile:
    """The tokens and client registration of one server for one client (a file).

    ``problem`` is called with a sentence when the file exists but is not used (its
    permissions, its owner, unreadable JSON)."""

    def __init__(
        self,
        url: str,
        *,
        grant: str = "authorization_code",
        client_id: str | None = None,
        folder: str | os.PathLike[str] | None = None,
        problem: Any = None,
    ) -> None:
        self.url = url
        self.folder = Path(folder) if folder is not None else token_folder()
        self.path = self.folder / _file_name(url, grant, client_id)
        self.expires_at: float | None = None
        self._problem = problem
        self._fixed_client: Any = None

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"

    # -- the file ------------------------------------------------------------------

    def _say(self, message: str) -> None:
        if self._problem is not None:
            self._problem(message)

    def read(self) -> dict[str, Any]:
        """The file's content ({} when there is none or it is not used)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self._say(f"{self.path} is not used: {exc.strerror or exc}")
            return {}
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
                self._say(
                    f"{self.path} is not used: other users may read it (it must be the "
                    "user's own, mode 0600); the next login replaces it"
                )
                return {}
            raw = file.read()
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._say(f"{self.path} is not used: it is not valid JSON")
            return {}
        if not isinstance(data, dict):
            return {}
        register_secret_values(_secret_values(data))
        return data

    def write(self, data: dict[str, Any]) -> None:
        """Replace the file with ``data`` (0600, in a 0700 folder)."""
        register_secret_values(_secret_values(data))
        folder = make_folder(self.folder, 0o700)
        if stat.S_IMODE(folder.stat().st_mode) & 0o077:
            os.chmod(folder, 0o700)
        temp = folder / f".{self.path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=1, sort_keys=True)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def update(self, **fields: Any) -> None:
        data = self.read()
        for key, value in fields.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        data["server"] = self.url
        self.write(data)

    def forget(self) -> bool:
        """Remove the file (a logout); True when there was one."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            return False
        return True

    def drop_tokens(self) -> None:
        """Forget the tokens, keep the client registration (a refused refresh)."""
        if self.read().get("tokens") is not None:
            self.update(tokens=None, expires_at=None)
        self.expires_at = None

    # -- the SDK's TokenStorage ----------------------------------------------------

    def pin_client(self, client: Any) -> None:
        """A pre-registered client (the spec's client id): ``get_client_info`` returns
        it and registrations are not stored."""
        self._fixed_client = client
        secret = getattr(client, "client_secret", None)
        if secret:
            register_secret_values([secret])

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken
        from pydantic import ValidationError

        data = self.read()
        raw = data.get("tokens")
        if not isinstance(raw, dict):
            self.expires_at = None
            return None
        try:
            tokens = OAuthToken.model_validate(raw)
        except ValidationError:
            self._say(
                f"{self.path}: the stored tokens are not usable; the next login replaces them"
            )
            return None
        expires_at = data.get("expires_at")
        self.expires_at = float(expires_at) if isinstance(expires_at, int | float) else None
        return tokens

    async def set_tokens(self, tokens: Any) -> None:
        raw = tokens.model_dump(mode="json", exclude_none=True)
        expires_in = raw.get("expires_in")
        self.expires_at = time.time() + expires_in if isinstance(expires_in, int) else None
        self.update(tokens=raw, expires_at=self.expires_at)

    async def get_client_info(self) -> Any:
        if self._fixed_client is not None:
            return self._fixed_client
        from mcp.shared.auth import OAuthClientInformationFull
        from pydantic import ValidationError

        raw = self.read().get("client")
        if not isinstance(raw, dict):
            return None
        try:
            return OAuthClientInformationFull.model_validate(raw)
        except ValidationError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        if self._fixed_client is not None:
            return
        self.update(client=client_info.model_dump(mode="json", exclude_none=True))


def _secret_values(data: dict[str, Any]) -> list[str]:
    out: list[str] = []
    tokens = data.get("tokens")
    if isinstance(tokens, dict):
        out += [v for k, v in tokens.items() if k in ("access_token", "refresh_token", "id_token")]
    client = data.get("client")
    if isinstance(client, dict):
        out += [v for k, v in client.items() if k in ("client_secret", "registration_access_token")]
    return [v for v in out if isinstance(v, str) and v]
