"""Slow clients are cut off: many connections trickling a request head (and, with and
without a token, a request body) a little at a time are all closed by the server, while
a normal client is served beside them; the log says nothing of them but one count.

The server runs with short deadlines and a small connection bound (flags), so the test
asserts that every trickling connection was closed, not how fast."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from .servekit import AgentKit, Served, wait_status

HEAD_TIMEOUT_S = 4
BODY_TIMEOUT_S = 4
MAX_CONNECTIONS = 40
TICK_S = 0.2
GIVE_UP_S = 120  # the test's own limit: a connection still open then was never cut


@dataclass
class Trickler:
    """One connection sending its request a line (or a byte) at a time."""

    head: bytes
    drip: bytes
    received: bytearray = field(default_factory=bytearray)
    closed: bool = False

    async def run(self, port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(self.head)

        async def read() -> None:
            while chunk := await reader.read(65536):
                self.received += chunk

        reading = asyncio.create_task(read())
        give_up = asyncio.get_running_loop().time() + GIVE_UP_S
        try:
            while not reading.done() and asyncio.get_running_loop().time() < give_up:
                try:
                    writer.write(self.drip)
                    await writer.drain()
                except (ConnectionError, OSError):
                    break  # the server closed it
                await asyncio.wait({reading}, timeout=TICK_S)
            await asyncio.wait_for(reading, max(0.0, give_up - asyncio.get_running_loop().time()))
            self.closed = True
        except TimeoutError:  # (an OSError: caught first) never closed by the server
            reading.cancel()
        except (ConnectionError, OSError):
            self.closed = True
        finally:
            writer.close()

    @property
    def status(self) -> int | None:
        match = re.match(rb"HTTP/1\.1 (\d{3})", bytes(self.received))
        return int(match.group(1)) if match else None


def _head_trickler(port: int) -> Trickler:
    # a request line and a Host, then one more header line every tick, never the end
    return Trickler(
        f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode(), b"X-Slow: 1\r\n"
    )


def _body_trickler(port: int, token: str | None) -> Trickler:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (
        f"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        '{"prompt": "'
    )
    return Trickler(head.encode(), b"a")


async def _served_meanwhile(served: Served, tricklers: list[Trickler]) -> int:
    """A normal client's health check and run, once the tricklers are connected; how
    many tricklers were still open when it was served."""
    await asyncio.sleep(TICK_S * 3)  # every trickler has connected and begun
    async with httpx.AsyncClient(base_url=served.url, headers=served.headers, timeout=30) as c:
        assert (await c.get("/healthz")).status_code == 200
        started = await c.post("/v1/runs", json={"prompt": "served meanwhile"})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        status = await asyncio.to_thread(_wait_done, served, run_id)
    assert status["status"] == "done" and status["text"] == "echo: served meanwhile"
    return sum(not t.closed for t in tricklers)


def _wait_done(served: Served, run_id: str) -> dict[str, object]:
    with served.client() as client:
        return wait_status(client, run_id, "done", "error")


async def _attack(served: Served, heads: int, bodies: int) -> tuple[list[Trickler], int]:
    port = urlsplit(served.url).port
    assert port is not None
    # the bodies first: once their heads are in, their connections are busy with a
    # request, and the heads after them fill the rest of the bound and go past it
    tricklers = [_body_trickler(port, served.token) for _ in range(bodies)]
    tasks = [asyncio.create_task(t.run(port)) for t in tricklers]
    await asyncio.sleep(TICK_S * 2)
    tricklers += [_head_trickler(port) for _ in range(heads)]
    tasks += [asyncio.create_task(t.run(port)) for t in tricklers[bodies:]]
    still_open = await _served_meanwhile(served, tricklers)
    await asyncio.gather(*tasks)
    return tricklers, still_open


def _serve(kit: AgentKit, token: str | None) -> Served:
    return kit.serve(
        "--header-timeout",
        str(HEAD_TIMEOUT_S),
        "--body-timeout",
        str(BODY_TIMEOUT_S),
        "--max-connections",
        str(MAX_CONNECTIONS),
        token=token,
    )


def _check(served: Served, tricklers: list[Trickler], still_open: int) -> None:
    assert all(t.closed for t in tricklers), sum(not t.closed for t in tricklers)
    # the normal client was served while the bound was full of tricklers
    assert still_open > 0
    heads = [t for t in tricklers if t.drip != b"a"]
    bodies = [t for t in tricklers if t.drip == b"a"]
    # a head that never ended: 408 at its deadline, or closed for a newcomer (nothing
    # said: it sent no complete request)
    assert {t.status for t in heads} <= {408, None}, {t.status for t in heads}
    # a body that never ended: 408 (a tokenless one), or the 401 it got at once
    for trickler in bodies:
        answer = bytes(trickler.received)
        assert trickler.status in (408, 401), answer[:200]
        if trickler.status == 408:
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["type"] == (
                "request_timeout"
            )
    assert served.stop() == 0
    lines = [line for line in served.output().splitlines() if line.strip()]
    assert lines[0].startswith("serving helper"), lines
    # one line counts them: nothing per connection
    assert len(lines) == 2, lines
    assert lines[1].startswith("closed connections:"), lines
    counted = sum(int(n) for n in re.findall(r"(\d+) (?:too slow|over the bound)", lines[1]))
    assert counted == len(tricklers), lines[1]


def test_trickling_clients_are_cut_off_without_a_token(kit: AgentKit) -> None:
    served = _serve(kit, token=None)
    tricklers, still_open = asyncio.run(_attack(served, heads=120, bodies=20))
    _check(served, tricklers, still_open)


def test_trickling_clients_are_cut_off_with_a_token(kit: AgentKit) -> None:
    served = _serve(kit, token="slow-client-token-0123456789")
    tricklers, still_open = asyncio.run(_attack(served, heads=120, bodies=30))
    _check(served, tricklers, still_open)
