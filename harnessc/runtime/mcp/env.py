"""The environment an MCP server child gets: the agent's, credentials removed, plus ``env:``.

A server declared in a spec is someone else's code; like bash it must not inherit the
API keys of the agent. Variables whose name says they hold a credential are dropped
(fail closed: a false positive only means the spec has to pass it in ``env:``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["child_environ", "is_credential_name"]

_CREDENTIAL = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|"
    r"_PAT$|^PAT_|DSN$|CONNECTION_STRING)",
    re.IGNORECASE,
)


def is_credential_name(name: str) -> bool:
    return bool(_CREDENTIAL.search(name))


def child_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without credentials (values starting ``()``, shell functions, too)."""
    return {
        k: v for k, v in environ.items() if not is_credential_name(k) and not v.startswith("()")
    }
