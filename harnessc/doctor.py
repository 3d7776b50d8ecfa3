"""``harnessc doctor SPEC``: can each model of an agent be reached? Checked for real:

1. the model's key variable is set (its value is never printed);
2. its endpoint answers (``GET {base_url}/models``, with the key as the API expects it;
   a query string of base_url stays after ``/models``);
3. its model id is among the models the endpoint lists;

and for a spec with ``durable:``, its database (answers, schema version, queue, live
workers: ``harnessc.runtime.durable.health``).

Each check prints one line; exit 0 when nothing failed, 1 otherwise. Every URL printed
goes through ``redact_url`` (no user info, no query values: a key may be among them).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harnessc.runtime.support.envref import unresolved_names
from harnessc.runtime.support.urls import redact_url

__all__ = ["Check", "check_model", "doctor"]

DEFAULT_URLS = {
    "openai-completions": "https://api.openai.com/v1",
    "anthropic-messages": "https://api.anthropic.com",
    "google-generative-ai": "https://generativelanguage.googleapis.com/v1beta",
}


@dataclass(slots=True)
class Check:
    status: str  # "ok" | "warning" | "error"
    text: str


def _models_url(api: str, base_url: str) -> str:
    """The endpoint listing the models: ``/models`` added to the path of ``base_url``
    (``/v1/models`` for Anthropic's), its query string kept after it."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if api == "anthropic-messages" and not path.endswith("/v1"):
        path += "/v1"
    return urlunsplit(parts._replace(path=path + "/models"))


def _listed_ids(api: str, body: Any) -> set[str]:
    items = body.get("data") if isinstance(body, dict) else None
    if api == "google-generative-ai" and isinstance(body, dict):
        items = body.get("models")
    ids: set[str] = set()
    for item in items or []:
        if isinstance(item, dict):
            name = str(item.get("id") or item.get("name") or "")
            ids.add(name.removeprefix("models/"))
    return ids


def check_model(key: str, model: Any, get: Callable[..., Any] | None = None) -> list[Check]:
    """The checks of one model (``get``: an httpx-like GET, for the endpoint check)."""
    import httpx

    checks: list[Check] = []
    label = f"model {key!r} ({model.id})"
    api_key = None
    if model.api_key_env:
        api_key = os.environ.get(model.api_key_env)
        if api_key:
            checks.append(Check("ok", f"{label}: {model.api_key_env} is set"))
        else:
            checks.append(Check("error", f"{label}: {model.api_key_env} is not set"))
    base = model.base_url or DEFAULT_URLS.get(model.api, "")
    unset = unresolved_names(base)
    if unset:
        checks.append(
            Check(
                "error",
                f"{label}: {unset[0]} is not set (base_url reads it); set it or "
                "check with --base-url URL",
            )
        )
        return checks
    if not base.startswith(("http://", "https://")):
        shown = redact_url(base)
        checks.append(Check("error", f"{label}: base_url {shown!r} has no http:// or https://"))
        return checks
    url = _models_url(model.api, base)
    shown, probe = redact_url(base), redact_url(url)  # every URL printed: redacted
    headers: dict[str, str] = {}
    params: dict[str, str] = {}
    if api_key:
        if model.api == "anthropic-messages":
            headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
        elif model.api == "google-generative-ai":
            params = {"key": api_key}
        else:
            headers = {"authorization": f"Bearer {api_key}"}
    try:
        # the key's parameter (Google's) added to base_url's own query, not in place of it
        target = httpx.URL(url).copy_merge_params(params) if params else url
        response = (get or httpx.get)(target, headers=headers, timeout=10.0)
    except httpx.ConnectError:
        checks.append(
            Check("error", f"{label}: nothing answers at {shown} (is the server running?)")
        )
        return checks
    except httpx.HTTPError as exc:
        text = (
            redact_url(str(exc)).replace(api_key, "[redacted]") if api_key else redact_url(str(exc))
        )
        checks.append(Check("error", f"{label}: {shown}: {type(exc).__name__}: {text}"))
        return checks
    status = response.status_code
    if status in (401, 403):
        variable = model.api_key_env or "api_key_env"
        checks.append(
            Check("error", f"{label}: {probe} refused the key (HTTP {status}): check {variable}")
        )
        return checks
    if status == 404:
        hint = " (check that base_url ends with /v1)" if model.api == "openai-completions" else ""
        checks.append(Check("warning", f"{label}: {probe} is not found (HTTP 404){hint}"))
        return checks
    if status >= 400:
        checks.append(Check("error", f"{label}: {probe} answered HTTP {status}"))
        return checks
    checks.append(Check("ok", f"{label}: {shown} answers"))
    try:
        listed = _listed_ids(model.api, response.json())
    except ValueError:
        listed = set()
    if not listed:
        checks.append(Check("warning", f"{label}: the endpoint lists no models to compare with"))
    elif model.id in listed:
        checks.append(Check("ok", f"{label}: the endpoint lists {model.id}"))
    else:
        from harnessc.spec.diagnostics import did_you_mean

        hint = did_you_mean(model.id, sorted(listed))
        checks.append(Check("error", f"{label}: the endpoint does not list {model.id}{hint}"))
    return checks


def doctor(
    models: dict[str, Any],
    echo: Callable[[str], None],
    durable: Callable[[], list[tuple[str, str]]] | None = None,
) -> int:
    """Every model's checks, then ``durable``'s (a spec with ``durable:``: its database,
    schema, queue and workers)."""
    failed = False
    checks = [check for key, model in models.items() for check in check_model(key, model)]
    if durable is not None:
        checks += [Check(status, text) for status, text in durable()]
    for check in checks:
        echo(f"{check.status:<7}  {check.text}")
        failed = failed or check.status == "error"
    return 1 if failed else 0
