"""The environment child processes get: the parent's, minus every credential.

Tools and hooks run other programs (``bash``, command hooks, MCP servers). They get a
copy of the agent's environment with these variables removed:

- every variable a model names in ``api_key_env`` (models register the name when they
  are built, see :func:`register_secret_names`), and any other name registered;
- every variable whose name looks like a credential (case-insensitive):
  names ending in ``_KEY``, ``_KEYS``, ``_APIKEY``, ``_TOKEN``, ``_TOKENS``, ``_SECRET``,
  ``_SECRETS``, ``_PASSWORD``, ``_PASSWD``, ``_PASS``, ``_PWD`` (except ``PWD``/``OLDPWD``),
  ``_CREDENTIAL(S)``, ``_AUTH``, ``_PAT``, ``_COOKIE``, ``_DSN``;
  names containing ``API_KEY``, ``APIKEY``, ``SECRET``, ``PASSWORD``, ``PASSWD``,
  ``PASSPHRASE``, ``TOKEN``, ``CREDENTIAL``, ``PRIVATE_KEY`` or ``CONNECTION_STRING``;
  names starting with ``AWS_``, ``AZURE_``, ``GOOGLE_APPLICATION_CREDENTIALS``,
  ``DOCKER_AUTH`` or ``VAULT_``;
  the exact names ``PGPASSWORD``, ``DATABASE_URL``, ``REDIS_URL``, ``NETRC``,
  ``GITHUB_PAT``; and the OpenTelemetry exporter's headers
  (``OTEL_EXPORTER_OTLP_HEADERS`` and its ``_TRACES`` / ``_METRICS`` / ``_LOGS`` forms);
- every other variable whose value equals the value of a removed one (a copy of a key
  under a harmless name).

``passthrough`` names (the spec's ``tool_context.env_passthrough``, or the
``HARNESSC_ENV_PASSTHROUGH`` variable: comma-separated) are kept even when they match.

Secrets that live in no variable (the OAuth tokens of MCP servers) are registered by
value (:func:`register_secret_values`): the redaction of tool results, traces and logs
removes every registered value (:func:`registered_secret_values`), and a child's
environment loses any variable holding one.

:func:`redact` removes the agent's own credentials from text a tool returns: the value of
every registered name (the models' ``api_key_env``, registered secrets) that is set,
wherever it appears (a workspace ``.env`` holding the key, a program printing its
environment), becomes ``[redacted NAME]`` before the result is recorded, shown to a
model or written to a cassette.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping

__all__ = [
    "PASSTHROUGH_ENV",
    "is_credential_name",
    "redact",
    "register_secret_names",
    "register_secret_values",
    "registered_secret_names",
    "registered_secret_values",
    "scrubbed_environ",
]

PASSTHROUGH_ENV = "HARNESSC_ENV_PASSTHROUGH"

# What a credential variable's name looks like: compiled on first use (0.6 ms; a
# runtime imported without running an agent never needs it).
_CREDENTIAL_PATTERN = r"""
    (?:_(?:KEYS?|APIKEY|TOKENS?|SECRETS?|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH|PAT
         |COOKIE|DSN)$)
    | API_?KEY | SECRET | PASSWORD | PASSWD | PASSPHRASE | TOKEN | CREDENTIAL | PRIVATE_KEY
    | CONNECTION_STRING
    | ^(?:AWS_|AZURE_|GOOGLE_APPLICATION_CREDENTIALS|DOCKER_AUTH|VAULT_)
    | ^(?:PGPASSWORD|DATABASE_URL|REDIS_URL|NETRC|GITHUB_PAT)$
    | ^OTEL_EXPORTER_OTLP(?:_TRACES|_METRICS|_LOGS)?_HEADERS$
    """
_COMPILED: list[re.Pattern[str]] = []


def _credential_name() -> re.Pattern[str]:
    if not _COMPILED:
        _COMPILED.append(re.compile(_CREDENTIAL_PATTERN, re.IGNORECASE | re.VERBOSE))
    return _COMPILED[0]


# Names that match a pattern above but are never secrets.
_NEVER_SECRET = frozenset({"PWD", "OLDPWD"})
# A copy of a secret is recognised by value only when the value is this long.
_MIN_COPY_LEN = 8

_REGISTERED: set[str] = set()
_VALUES: set[str] = set()
_LOCK = threading.Lock()


def register_secret_names(names: Iterable[str | None]) -> None:
    """Remember ``names`` (e.g. a model's ``api_key_env``) as secrets for every child env."""
    with _LOCK:
        _REGISTERED.update(name for name in names if name)


def registered_secret_names() -> frozenset[str]:
    with _LOCK:
        return frozenset(_REGISTERED)


def register_secret_values(values: Iterable[str | None]) -> None:
    """Remember ``values`` (tokens) as secrets: redacted wherever the runtime redacts.
    Values shorter than 8 characters are not taken (they would redact ordinary words)."""
    with _LOCK:
        _VALUES.update(v for v in values if v and len(v) >= _MIN_COPY_LEN)


def registered_secret_values() -> frozenset[str]:
    with _LOCK:
        return frozenset(_VALUES)


def is_credential_name(name: str) -> bool:
    """True when ``name`` looks like a variable holding a credential."""
    return name not in _NEVER_SECRET and _credential_name().search(name) is not None


def _passthrough_from(base: Mapping[str, str]) -> set[str]:
    raw = base.get(PASSTHROUGH_ENV, "")
    return {part.strip() for part in raw.split(",") if part.strip()}


def scrubbed_environ(
    base: Mapping[str, str] | None = None,
    *,
    secret_names: Iterable[str] = (),
    passthrough: Iterable[str] = (),
) -> dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) without credentials (see the module doc).

    ``secret_names`` are removed on top of the registered names and the patterns;
    ``passthrough`` names are kept whatever they match (a registered model key too:
    passing one through is an explicit choice).
    """
    source = dict(os.environ if base is None else base)
    keep = set(passthrough) | _passthrough_from(source)
    secrets = set(secret_names) | registered_secret_names()
    out: dict[str, str] = {}
    removed_values: set[str] = set(registered_secret_values())
    for name, value in source.items():
        if name not in keep and (name in secrets or is_credential_name(name)):
            if len(value) >= _MIN_COPY_LEN:
                removed_values.add(value)
            continue
        out[name] = value
    if removed_values:
        for name in [n for n, v in out.items() if v in removed_values and n not in keep]:
            del out[name]
    return out


def _secret_values() -> list[tuple[str, str]]:
    """(value, name) of every registered secret that is set, longest value first."""
    found = {}
    for name in registered_secret_names():
        value = os.environ.get(name)
        if value and len(value) >= _MIN_COPY_LEN:
            found[value] = name
    return sorted(found.items(), key=lambda item: -len(item[0]))


def redact(text: str) -> str:
    """``text`` with the value of every registered secret replaced by ``[redacted NAME]``."""
    if not text:
        return text
    for value, name in _secret_values():
        if value in text:
            text = text.replace(value, f"[redacted {name}]")
    return text
