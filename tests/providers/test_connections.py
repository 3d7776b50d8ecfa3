"""The providers' connections: aiohttp's client, TLS, proxies, no shared cookies.

Every test talks to a real local server (``ProtocolServer``, over TLS with a
certificate from a throwaway CA where it says so).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from collections.abc import Iterator

import pytest
import trustme

from harnessc.runtime.core.messages import UserMessage
from harnessc.runtime.core.options import Model
from harnessc.runtime.providers.clients import HttpClientPool, environment_proxy
from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

from .conftest import MakeRequest


def _reply(text: str, headers: dict[str, str] | None = None) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events([text]), headers=headers)


async def _ask(
    clients: HttpClientPool, base_url: str, make_request: MakeRequest, prompt: str = "hi"
) -> str:
    provider = OpenAICompletionsProvider(clients)
    model = Model(id="m", api="openai-completions", base_url=base_url)
    final = None
    request = make_request(model, [UserMessage(prompt)], max_retries=0)
    async for event in provider.stream(request):
        final = event
    assert final is not None
    if final.type == "error":
        return f"error: {final.partial.error_message}"
    return "".join(block.text for block in final.partial.content if hasattr(block, "text"))


def _replies(
    make_request: MakeRequest,
    url: str,
    count: int = 1,
    ssl_context: ssl.SSLContext | None = None,
    prompt: str = "hi",
) -> list[str]:
    """``count`` requests in turn through one pool (closed after): texts or errors."""

    async def main() -> list[str]:
        clients = HttpClientPool(ssl_context=ssl_context)
        try:
            return [await _ask(clients, url, make_request, prompt) for _ in range(count)]
        finally:
            await clients.aclose()

    return asyncio.run(main())


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def tls_server(ca: trustme.CA) -> Iterator[ProtocolServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    with ProtocolServer(ssl_context=context) as running:
        yield running


def test_a_reply_streams_over_tls_from_a_server_the_context_trusts(
    tls_server: ProtocolServer, ca: trustme.CA, make_request: MakeRequest
) -> None:
    tls_server.reset()
    tls_server.enqueue(_reply("over TLS"), _reply("again"))
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)

    assert tls_server.url.startswith("https://")
    replies = _replies(make_request, tls_server.url + "/v1", 2, trusting)
    assert replies == ["over TLS", "again"]
    first, second = tls_server.requests
    assert first.client_port == second.client_port  # one TLS connection, kept alive


def test_an_untrusted_certificate_is_a_tls_failure_that_names_the_cause(
    tls_server: ProtocolServer, make_request: MakeRequest
) -> None:
    tls_server.reset()
    tls_server.enqueue(_reply("never"))

    # The default context trusts certifi's roots: the throwaway CA is not among them.
    (message,) = _replies(make_request, tls_server.url + "/v1")
    assert message.startswith("error: TLS failure"), message
    assert "certificate" in message
    assert tls_server.requests == []


def test_a_cookie_one_reply_sets_is_never_sent_with_another_sessions_request(
    server: ProtocolServer, make_request: MakeRequest
) -> None:
    # The pool is shared by every harness of a process: a cookie jar in it would carry
    # one session's cookies (a load balancer's, an account's) into all the others.
    server.enqueue(_reply("first", {"set-cookie": "session=alice; Path=/"}), _reply("second"))

    assert _replies(make_request, server.url + "/v1", 2) == ["first", "second"]
    assert all("cookie" not in r.headers for r in server.requests)


def test_the_environments_proxy_carries_the_request_and_its_credentials(
    server: ProtocolServer, make_request: MakeRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The local server plays the proxy: a request for a host that does not resolve
    # reaches it in absolute form, with the proxy's credentials and not the server's.
    proxy = server.url.replace("http://", "http://bob:s%40cret@")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server.enqueue(_reply("via the proxy"))

    assert _replies(make_request, "http://api.example.invalid/v1") == ["via the proxy"]
    (request,) = server.requests
    assert request.path == "http://api.example.invalid/v1/chat/completions"
    assert request.headers["host"] == "api.example.invalid"
    assert request.headers["proxy-authorization"] == "Basic Ym9iOnNAY3JldA=="  # bob:s@cret


def test_no_proxy_and_the_scheme_choose_whether_a_url_goes_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert environment_proxy("https://api.example.com/v1") is None
    monkeypatch.setenv("HTTPS_PROXY", "proxy.internal:3128")
    chosen = environment_proxy("https://api.example.com/v1")
    assert chosen is not None and chosen.url == "http://proxy.internal:3128"
    assert chosen.variable == "HTTPS_PROXY"
    assert environment_proxy("http://api.example.com/v1") is None  # HTTPS_PROXY only
    monkeypatch.setenv("ALL_PROXY", "http://all.internal:8080")
    other = environment_proxy("http://api.example.com/v1")
    assert other is not None and other.url == "http://all.internal:8080"
    monkeypatch.setenv("NO_PROXY", "localhost,.example.com")
    assert environment_proxy("https://api.example.com/v1") is None
    assert environment_proxy("http://localhost:11434/v1") is None
    assert environment_proxy("https://api.openai.com/v1") is not None
    assert environment_proxy("https://badexample.com/v1") is not None  # not a subdomain
    monkeypatch.setenv("NO_PROXY", "localhost:11434,10.0.0.0/8,[::1]:8000")
    assert environment_proxy("http://localhost:11434/v1") is None
    assert environment_proxy("http://localhost:8080/v1") is not None  # another port
    assert environment_proxy("http://10.1.2.3:8000/v1") is None
    assert environment_proxy("http://[::1]:8000/v1") is None
    monkeypatch.setenv("NO_PROXY", "*")
    assert environment_proxy("https://api.openai.com/v1") is None


def test_a_connection_the_server_closes_after_its_reply_is_replaced_without_an_error(
    server: ProtocolServer, make_request: MakeRequest
) -> None:
    server.enqueue(_reply("one", {"connection": "close"}), _reply("two"))

    assert _replies(make_request, server.url + "/v1", 2) == ["one", "two"]
    first, second = server.requests
    assert first.client_port != second.client_port


def test_a_host_name_connects_to_whichever_of_its_addresses_answers(
    server: ProtocolServer, make_request: MakeRequest
) -> None:
    # "localhost" may resolve to ::1 as well as 127.0.0.1; the server listens on the
    # IPv4 one only, so the connection races the addresses (happy eyeballs).
    server.enqueue(_reply("found"))
    url = server.url.replace("127.0.0.1", "localhost") + "/v1"

    assert _replies(make_request, url) == ["found"]
    assert server.requests[0].headers["host"] == url.split("/")[2]


@pytest.mark.parametrize("secure", [False, True], ids=["http", "https"])
def test_a_body_larger_than_the_sockets_buffers_is_sent_whole(
    secure: bool,
    server: ProtocolServer,
    tls_server: ProtocolServer,
    ca: trustme.CA,
    make_request: MakeRequest,
) -> None:
    # 8 MB: the socket takes it in pieces, so sending waits for the server to read.
    target = tls_server if secure else server
    target.reset()
    target.enqueue(_reply("read it all"))
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    prompt = "0123456789abcdef" * (512 * 1024)
    assert _replies(make_request, target.url + "/v1", 1, trusting, prompt) == ["read it all"]
    (request,) = target.requests
    assert request.json["messages"][-1]["content"] == prompt


def test_a_kept_connection_the_server_closed_while_idle_is_not_reused(
    make_request: MakeRequest,
) -> None:
    # A server that closes each connection a moment after its reply (an idle timeout
    # shorter than the client's): the next request must open a new connection, not
    # fail on the closed one (no retry, no error).
    body = b"".join(openai_events(["idle"]))
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"content-length: %d\r\n\r\n" % len(body)
    )
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    accepted: list[int] = []

    def serve() -> None:
        for _ in range(2):
            conn, (_, client_port) = listener.accept()
            accepted.append(client_port)
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                headers, _, rest = data.partition(b"\r\n\r\n")
                length = int(headers.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                while len(rest) < length:
                    rest += conn.recv(65536)
                conn.sendall(head + body)
                time.sleep(0.05)  # then close, as an idle timeout would

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def main() -> list[str]:
        clients = HttpClientPool()
        url = f"http://127.0.0.1:{port}/v1"
        try:
            first = await _ask(clients, url, make_request)
            await asyncio.sleep(0.3)  # the close reaches the idle connection
            return [first, await _ask(clients, url, make_request)]
        finally:
            await clients.aclose()

    try:
        assert asyncio.run(main()) == ["idle", "idle"]
    finally:
        listener.close()
        thread.join(timeout=5)
    assert len(accepted) == 2 and accepted[0] != accepted[1]


def _only_proxy(monkeypatch: pytest.MonkeyPatch, **proxies: str) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in proxies.items():
        monkeypatch.setenv(name, value)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6(), reason="no IPv6 loopback")
def test_an_ipv6_literal_base_url_is_reached_directly(make_request: MakeRequest) -> None:
    with ProtocolServer(host="::1") as v6:
        v6.enqueue(_reply("over IPv6"))
        assert v6.url.startswith("http://[::1]:")
        assert _replies(make_request, v6.url + "/v1") == ["over IPv6"]
        assert v6.requests[0].headers["host"] == v6.url.removeprefix("http://")


def test_an_ipv6_literal_keeps_its_brackets_in_a_proxys_request_line(
    server: ProtocolServer, make_request: MakeRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only_proxy(monkeypatch, HTTP_PROXY=server.url)
    server.enqueue(_reply("via the proxy"))

    assert _replies(make_request, "http://[2001:db8::5]:19010/v1") == ["via the proxy"]
    (request,) = server.requests
    assert request.path == "http://[2001:db8::5]:19010/v1/chat/completions"
    assert request.headers["host"] == "[2001:db8::5]:19010"


def test_an_ipv6_literal_keeps_its_brackets_in_connect_and_a_refusal_names_the_proxy(
    server: ProtocolServer, make_request: MakeRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only_proxy(monkeypatch, HTTPS_PROXY=server.url)
    server.enqueue(ScriptedResponse.error(502, "no route"))

    (message,) = _replies(make_request, "https://[2001:db8::5]:19010/v1")
    (request,) = server.requests
    assert (request.method, request.path) == ("CONNECT", "[2001:db8::5]:19010")
    assert message.startswith(f"error: the proxy {server.url} (from HTTPS_PROXY) refused"), message


def test_a_proxy_that_cannot_be_reached_is_named_not_the_model_server(
    make_request: MakeRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    _only_proxy(monkeypatch, https_proxy=f"http://bob:hunter2secret@127.0.0.1:{port}")

    (message,) = _replies(make_request, "https://api.example.invalid/v1")
    assert message.startswith(
        f"error: cannot reach the proxy http://127.0.0.1:{port} (from https_proxy): "
        "connection refused"
    ), message
    assert "NO_PROXY" in message and "is the server running" not in message
    assert "hunter2" not in message


@pytest.mark.parametrize("variable", ["ALL_PROXY", "https_proxy"])
def test_a_socks_proxy_is_refused_naming_its_variable(
    variable: str,
    server: ProtocolServer,
    make_request: MakeRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _only_proxy(monkeypatch, **{variable: "socks5://user:pw-secret@127.0.0.1:1080"})
    server.enqueue(_reply("never"))

    (message,) = _replies(make_request, server.url.replace("http:", "https:") + "/v1")
    assert message.startswith(f"error: {variable} names a socks5 proxy"), message
    assert "not supported" in message and "no request was sent" in message
    assert "pw-secret" not in message and "ModuleNotFoundError" not in message
    assert server.requests == []
