"""Every generated module's build_options() takes http_clients= (many sessions, one pool)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from harnessc.runtime.providers.transport import HttpClientPool

GENERATED = Path(__file__).resolve().parents[2] / "generated"


@pytest.mark.parametrize("name", ["hello", "coder"])
def test_build_options_passes_the_shared_clients_on(name: str) -> None:
    spec = importlib.util.spec_from_file_location(f"gen_{name}", GENERATED / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from harnessc.runtime.session import Session

    clients = HttpClientPool(max_concurrent=8)
    shared = module.build_options(session=Session(), http_clients=clients)
    assert shared.http_clients is clients
    assert module.build_options(session=Session()).http_clients is None
