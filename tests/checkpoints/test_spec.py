"""``checkpoints:`` in a spec: on by default, its settings in the generated module,
``false`` turns it off, a bad value is an error with its place."""

from __future__ import annotations

from pathlib import Path

from harnessc.compiler.render import render
from harnessc.spec import parse_spec

BASE = """\
version: 1
name: agent
models:
  main: {provider: openai, id: m, api_key_env: K}
tools: [bash]
"""


def _render(tmp_path: Path, extra: str = "") -> str:
    loaded = parse_spec((BASE + extra).encode(), tmp_path / "agent.yaml")
    assert loaded.spec is not None, [d.format() for d in loaded.diagnostics]
    return render(loaded, tmp_path / "generated")


def test_on_by_default(tmp_path: Path) -> None:
    assert "checkpoints=CheckpointSettings()," in _render(tmp_path)


def test_settings_reach_the_module(tmp_path: Path) -> None:
    text = _render(
        tmp_path,
        "checkpoints:\n  exclude: [data/, '*.sqlite']\n  max_file_bytes: 1000\n"
        "  max_files: 500\n  dir: .checkpoints\n",
    )
    assert (
        'checkpoints=CheckpointSettings(exclude=["data/", "*.sqlite"], max_file_bytes=1000, '
        'max_files=500, folder=Path(".checkpoints")),'
    ) in " ".join(text.split()).replace("( ", "(").replace(", )", ")")


def test_false_turns_them_off(tmp_path: Path) -> None:
    assert "CheckpointSettings" not in _render(tmp_path, "checkpoints: false\n")


def test_a_bad_value_names_its_place(tmp_path: Path) -> None:
    loaded = parse_spec(
        (BASE + "checkpoints:\n  max_file_bytes: -1\n").encode(), tmp_path / "a.yaml"
    )
    assert loaded.spec is None
    [problem] = [d for d in loaded.diagnostics if d.severity == "error"]
    assert problem.line == 7 and "max_file_bytes" in problem.format()
    loaded = parse_spec((BASE + "checkpoints:\n  exclud: [x]\n").encode(), tmp_path / "b.yaml")
    assert loaded.spec is None
    assert any("exclude" in d.format() for d in loaded.diagnostics)  # did you mean


def test_an_agents_start_imports_no_checkpoint_machinery() -> None:
    """Checkpoints are on by default: an agent's start checks for a cut-short rewind with
    two stat calls and imports the store only when a tool batch may change files. On a
    new session the check waits for the first use (``checkpoint_notes`` here)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model\n"
        "from harnessc.runtime.core.checkpoint_settings import CheckpointSettings\n"
        "h = AgentHarness(AgentHarnessOptions(models={'m': Model(id='m', api='openai-completions')},"
        " checkpoints=CheckpointSettings()))\n"
        "assert not [m for m in sys.modules if m.startswith('harnessc.runtime.checkpoints')]\n"
        "assert h.checkpoint_notes() == []\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('harnessc.runtime.checkpoints'))\n"
        "assert loaded == ['harnessc.runtime.checkpoints', 'harnessc.runtime.checkpoints.layout'], loaded\n"
        "assert 'pathspec' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
