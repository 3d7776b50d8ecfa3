from __future__ import annotations

from pathlib import Path

import pytest

from harnessc.runtime.session import JsonlSessionRepo


@pytest.fixture
def repo(tmp_path: Path) -> JsonlSessionRepo:
    return JsonlSessionRepo(tmp_path / "sessions")
