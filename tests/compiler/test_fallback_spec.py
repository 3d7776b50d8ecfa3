"""``fallback:`` in the spec: names checked, smaller context windows warned, the wiring."""

from __future__ import annotations

from pathlib import Path

from harnessc.compiler.live import LiveAgent
from harnessc.runtime.providers.fallback import DEFAULT_FALLBACK_ON, ModelFallback
from harnessc.runtime.session import Session
from harnessc.spec import format_diagnostics, parse_spec

MODELS = """\
version: 1
name: fb
models:
  main: {provider: openai, id: a, base_url: "http://127.0.0.1:9/v1", context_window: 200000}
  backup: {provider: anthropic, id: b, base_url: "http://127.0.0.1:9", context_window: 100000}
  local: {provider: openai, id: c, base_url: "http://127.0.0.1:9/v1"}
"""


def _check(tmp_path: Path, extra: str) -> str:
    loaded = parse_spec((MODELS + extra).encode(), tmp_path / "fb.yaml")
    return format_diagnostics(loaded.diagnostics)


def test_unknown_fallback_name_is_an_error(tmp_path):
    text = _check(tmp_path, "fallback: [backup, locl]\n")
    assert "error: fallback model 'locl' is not a key of models" in text
    assert "did you mean 'local'" in text


def test_smaller_context_window_is_a_warning(tmp_path):
    text = _check(tmp_path, "fallback: [backup, local]\n")
    assert "warning: fallback model 'backup' has a smaller context window (100,000 tokens)" in text
    assert "'local'" not in text  # no window given: nothing to compare
    assert "error" not in text


def test_unknown_kind_and_negative_cooldown_are_errors(tmp_path):
    text = _check(tmp_path, "fallback: [local]\nfallback_on: [auth]\ncooldown_s: -1\n")
    assert "fallback_on[0]: 'auth' is not one of" in text
    assert "cooldown_s" in text


def test_wiring(tmp_path):
    spec = tmp_path / "fb.yaml"
    spec.write_text(MODELS + "fallback: [local]\nfallback_on: [rate_limit]\ncooldown_s: 5\n")
    live = LiveAgent(str(spec), str(tmp_path / "out"))
    assert live.load()
    options = live.build_options(session=Session(), cwd=str(tmp_path))
    assert isinstance(options.fallback, ModelFallback)
    assert (list(options.fallback.models), tuple(options.fallback.on)) == (
        ["local"],
        ("rate_limit",),
    )
    assert options.fallback.cooldown_s == 5
    spec.write_text(MODELS + "fallback: [local]\n")
    assert live.load()
    options = live.build_options(session=Session(), cwd=str(tmp_path))
    assert tuple(options.fallback.on) == DEFAULT_FALLBACK_ON and options.fallback.cooldown_s == 60
