"""``${VAR}`` references have one reader, shared by spec strings and ``.mcp.json`` files."""

from __future__ import annotations

import json
from pathlib import Path

from harnessc.runtime.mcp import config as mcp_config
from harnessc.runtime.support import envref
from harnessc.spec import envref as spec_envref


def test_spec_strings_and_mcp_files_use_the_same_reader() -> None:
    assert spec_envref.split_env_refs is envref.split_env_refs
    assert spec_envref.malformed_env_ref is envref.malformed_env_ref
    assert mcp_config.expand_env is envref.expand_env


def test_references_split_and_expand_alike() -> None:
    text = "a ${SET} b ${EMPTY:-d1} c ${UNSET:-d2} d ${UNSET} e $${LIT} ${EMPTY}"
    assert envref.split_env_refs(text) == [
        "a ",
        envref.EnvRef("SET"),
        " b ",
        envref.EnvRef("EMPTY", "d1"),
        " c ",
        envref.EnvRef("UNSET", "d2"),
        " d ",
        envref.EnvRef("UNSET"),
        " e ${LIT} ",
        envref.EnvRef("EMPTY"),
    ]
    environ = {"SET": "v", "EMPTY": ""}
    assert envref.expand_env(text, environ) == "a v b d1 c d2 d  e ${LIT} "
    assert envref.malformed_env_ref("ok ${A} bad ${1X} ${B") == "${1X}"
    assert envref.malformed_env_ref("$${1X} ${A:-x}") is None


def test_an_mcp_json_file_expands_with_the_shared_reader(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ENVREF_PORT", "9001")
    monkeypatch.delenv("ENVREF_MISSING", raising=False)
    file = tmp_path / ".mcp.json"
    server = {"url": "http://127.0.0.1:${ENVREF_PORT}/mcp", "headers": {"X": "$${ENVREF_PORT}"}}
    server["headers"]["Y"] = "${ENVREF_MISSING}"
    file.write_text(json.dumps({"mcpServers": {"s": server}}))
    (loaded,) = mcp_config.load_mcp_json(file)
    assert loaded.url == "http://127.0.0.1:9001/mcp"
    assert loaded.headers == {"X": "${ENVREF_PORT}", "Y": ""}
