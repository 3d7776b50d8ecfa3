from __future__ import annotations

from collections.abc import Iterator

import pytest

from harnessc.testing import ProtocolServer

from ._kit import KEY_ENV, SENTINEL


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


@pytest.fixture
def fresh_server(server: ProtocolServer, monkeypatch: pytest.MonkeyPatch) -> ProtocolServer:
    server.reset()
    monkeypatch.setenv(KEY_ENV, SENTINEL)
    return server
