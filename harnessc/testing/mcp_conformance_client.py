"""The client under test of the MCP conformance suite: harnessc's MCP client.

The suite runs ``python -m harnessc.testing.mcp_conformance_client <server-url>`` with
``MCP_CONFORMANCE_SCENARIO`` naming the scenario, ``MCP_CONFORMANCE_PROTOCOL_VERSION``
the revision to speak and, for some scenarios, ``MCP_CONFORMANCE_CONTEXT`` (a JSON
object: pre-registered client credentials, a signing key). This program connects to
the server the way an agent's toolset does (``ServerConnection`` of
``harnessc.runtime.mcp``, with the server's ``auth`` built from the context as a spec
would declare it), lists its tools and calls them as a model would (the calls a scenario's context
names, else each tool in turn), then closes the connection. It exits 1 with the error on stderr when the start-up or a call fails.

The person at the other end is ``SuiteUser``: the suite's authorization servers answer
an authorization request at once with the redirect (no login page), so the user
"opens" the URL and answers with the redirect it got; a question is answered by
accepting, with a value for each required field the schema gives no default for.
Tokens go to a temporary folder of the run, never the user's data folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from harnessc.runtime.mcp.user import (
    ElicitationAnswer,
    ElicitationRequest,
    LoginAnswer,
    LoginRequest,
)

__all__ = ["SuiteUser", "main"]

_TIMEOUT_S = 20.0
# The client ID metadata document URL the suite's authorization servers accept.
_CIMD_URL = "https://conformance-test.local/client-metadata.json"


class SuiteUser:
    """Answers as a person would, without a browser (see the module doc)."""

    def __init__(self) -> None:
        self.logins: list[LoginRequest] = []
        self.questions: list[ElicitationRequest] = []

    async def login(self, request: LoginRequest) -> LoginAnswer:
        import httpx

        self.logins.append(request)
        async with httpx.AsyncClient(follow_redirects=False, timeout=_TIMEOUT_S) as http:
            response = await http.get(request.url)
        location = response.headers.get("location")
        if not location:
            raise RuntimeError(
                f"the authorization URL answered {response.status_code} without a redirect"
            )
        return LoginAnswer(location)

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.questions.append(request)
        if request.mode == "url":
            return ElicitationAnswer("accept")
        schema = request.schema or {}
        properties = schema.get("properties") or {}
        content: dict[str, Any] = {}
        for name in schema.get("required") or ():
            field = properties.get(name) or {}
            if "default" in field:
                continue
            content[name] = _value(field)
        return ElicitationAnswer("accept", content)


def _value(field: dict[str, Any]) -> Any:
    if field.get("enum"):
        return field["enum"][0]
    kind = field.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        return 1
    if kind == "array":
        items = field.get("items") or {}
        return [_value(items)] if items else []
    return "yes"


def _arguments(tool: Any) -> dict[str, Any]:
    """Arguments a model would give: a value for each required parameter."""
    schema = getattr(tool, "input_schema", None) or {}
    properties = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for number, name in enumerate(schema.get("required") or (), start=2):
        field = properties.get(name) or {}
        kind = field.get("type")
        out[name] = number if kind in ("number", "integer") else _value(field)
    return out


def _auth(scenario: str, context: dict[str, Any]) -> Any:
    """The ``auth`` a spec would declare for the scenario's server."""
    from harnessc.runtime.mcp.config import McpOAuth

    if not scenario.startswith("auth/"):
        return None
    client_id = context.get("client_id")
    if scenario.startswith("auth/client-credentials"):
        return McpOAuth(
            grant="client_credentials",
            client_id=client_id,
            client_secret=context.get("client_secret"),
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm"),
        )
    if client_id:  # a client registered beforehand
        return McpOAuth(client_id=client_id, client_secret=context.get("client_secret"))
    return McpOAuth(client_metadata_url=_CIMD_URL)


def _protocol_version(requested: str | None) -> str:
    """The revisions through 2025-11-25 speak the initialize handshake (pinned); the
    stateless 2026-07-28 one is what ``auto`` (the default) negotiates with
    ``server/discover``, retrying at a version the server names."""
    if requested and requested < "2026":
        return "2025-11-25"
    return "auto"


async def run(url: str, scenario: str, context: dict[str, Any], version: str | None) -> int:
    from harnessc.runtime.mcp.client import ServerConnection
    from harnessc.runtime.mcp.config import McpServerConfig
    from harnessc.runtime.mcp.user_bridge import UserBridge

    config = McpServerConfig(
        name="conformance",
        url=url,
        timeout_s=_TIMEOUT_S,
        auth=_auth(scenario, context),
        protocol_version=_protocol_version(version),
    )
    config.validate()
    user = SuiteUser()
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-client-") as logs:
        connection = ServerConnection(
            config,
            environ=os.environ,
            log_dir=Path(logs),
            user=UserBridge(user),
            problem=lambda text: print(f"note: {text}", file=sys.stderr),
        )
        try:
            await connection.start()
            tools = {tool.name: tool for tool in connection.tools}
            for name, why in connection.skipped:
                print(f"tool {name} skipped: {why}", file=sys.stderr)
            print(
                f"protocol {connection.protocol_version}; tools: {', '.join(tools) or 'none'}",
                file=sys.stderr,
            )
            for name, arguments in _calls(scenario, tools, context):
                outcome = await connection.call(name, arguments, _TIMEOUT_S, call_id=name)
                if outcome.error is not None:
                    print(f"error: {outcome.error}", file=sys.stderr)
                    return 1
                print(f"{name}: {outcome.result}", file=sys.stderr)
        finally:
            await connection.close()
    return 0


def _calls(
    scenario: str, tools: dict[str, Any], context: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """What a model would call in the scenario: the calls the scenario names, else
    each tool in turn."""
    named = context.get("toolCalls")
    if isinstance(named, list):
        return [(str(c["name"]), dict(c.get("arguments") or {})) for c in named]
    if scenario == "json-schema-ref-no-deref":
        return []  # the scenario's server answers nothing but the listing
    if scenario == "json-schema-2020-12-preservation":
        focal = tools["json_schema_2020_12_tool"]
        return [("json_schema_echo", {"schema": focal.input_schema})]
    return [(name, _arguments(tool)) for name, tool in tools.items()]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m harnessc.testing.mcp_conformance_client URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    context = json.loads(raw) if raw else {}
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-home-") as home:
        os.environ["XDG_DATA_HOME"] = home  # this run's tokens, not the user's
        try:
            return asyncio.run(run(args[-1], scenario, context, version))
        except Exception as exc:
            print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 1


if __name__ == "__main__":
    raise SystemExit(main())
