"""``durable:`` and ``session: {repo: postgres}`` in a spec: validation, the generated
wiring, and a compiled agent running a durable one-shot with its session in PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harnessc.compiler import compile as compile_specs
from harnessc.spec import load_spec
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

ROOT = Path(__file__).resolve().parents[2]

SPEC = textwrap.dedent(
    """\
    version: 1
    name: durable-demo
    models:
      main:
        provider: openai
        id: test-model
        base_url: ${TEST_BASE_URL}
        api_key_env: TEST_API_KEY
    durable:
      database_url: ${DURABLE_URL:-sqlite:///.harnessc/durable.sqlite}
      queue: {name: demo, concurrency: 2}
    session:
      repo: postgres
      url: ${DATABASE_URL}
    """
)


def write_spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents" / "durable-demo.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def compiled(tmp_path: Path, text: str = SPEC) -> Path:
    loaded = load_spec(write_spec(tmp_path, text))
    assert loaded.spec is not None, loaded.diagnostics
    out = tmp_path / "generated"
    files = compile_specs(loaded, out)
    ((name, source),) = files.items()
    target = out / Path(name).name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    return target


def test_the_generated_wiring(tmp_path: Path) -> None:
    source = compiled(tmp_path).read_text()
    assert 'return PostgresSessionRepo(env("DATABASE_URL"))' in source
    assert "session = session_repo().create(cwd=cwd" in source
    assert 'database_url=env("DURABLE_URL", "sqlite:///.harnessc/durable.sqlite")' in source
    assert 'queue="demo"' in source and "concurrency=2" in source
    assert "session_repo=session_repo" in source and "durable=durable_config" in source
    plain = compiled(tmp_path / "plain", SPEC.split("durable:")[0]).read_text()
    assert "run_durable_cli" not in plain and "DurableConfig" not in plain
    assert "run_cli(build_options" in plain


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ("session: {repo: postgres}", "repo: postgres needs url"),
        ("session: {url: 'postgresql://h/db'}", "url is only used with repo: postgres"),
        ("session: {repo: postgres, url: 'postgresql://u:hunter2@h/db'}", "holds a password"),
        ("durable: {database_url: 'postgresql://u:hunter2@h/db'}", "holds a password"),
        ("durable: {engine: temporal}", "dbos"),
        ("durable: {database_url: 'mysql://x'}", "must be sqlite:///PATH or postgresql"),
        ("durable: {database_url: 'sqlite:x.db'}", "not 'sqlite'"),
    ],
)
def test_bad_keys_are_clear_errors(tmp_path: Path, snippet: str, message: str) -> None:
    base = SPEC.split("durable:")[0]
    loaded = load_spec(write_spec(tmp_path, base + snippet + "\n"))
    assert loaded.spec is None
    text = "\n".join(str(d) for d in loaded.diagnostics)
    assert message in text and "hunter2" not in text


def test_a_compiled_agent_runs_durably_with_its_session_in_postgres(
    tmp_path: Path, pg_database: str
) -> None:
    pytest.importorskip("dbos")
    module = compiled(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    with ProtocolServer() as server:
        server.enqueue(ScriptedResponse.sse(openai_events(["durable hello"])))
        env = {
            **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
            "TEST_BASE_URL": f"{server.url}/v1",
            "TEST_API_KEY": "sk-test",
            "DATABASE_URL": pg_database,
            "PYTHONPATH": str(ROOT),
        }
        env.pop("DURABLE_URL", None)  # the default: SQLite under the working directory
        done = subprocess.run(
            [sys.executable, str(module), "say hi"],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "durable hello"
    assert (work / ".harnessc" / "durable.sqlite").is_file()
    from harnessc.runtime.session.postgres import PostgresSessionRepo

    repo = PostgresSessionRepo(pg_database)
    try:
        (meta,) = repo.list()
        assert meta.first_prompt == "say hi" and meta.metadata["agent"] == "durable-demo"
        with repo.open(meta.id, read_only=True) as session:
            assert session.context().messages[-1].text == "durable hello"  # type: ignore[union-attr]
    finally:
        repo.close()


def test_help_lists_the_durable_verbs_only_with_durable(tmp_path: Path) -> None:
    verbs = ("--submit", "--worker", "--concurrency", "--worker-id", "--follow", "--runs", "--run")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(module: Path, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(module), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    durable = compiled(tmp_path / "durable")
    text = run(durable, "--help")
    assert "durable runs:" in text and "--resume-with JSON" in text
    assert "--session ID|PATH" in text  # the ordinary options are all still there
    for verb in verbs:
        assert f"\n  {verb} " in text, verb
    completion = run(durable, "--completion", "bash")
    assert "--submit" in completion and "--worker-id" in completion
    plain = compiled(tmp_path / "plain", SPEC.split("durable:")[0])
    text = run(plain, "--help")
    assert "durable runs:" not in text
    for verb in verbs:
        assert f"\n  {verb} " not in text, verb


def test_harnessc_run_of_a_durable_spec_is_durable_and_check_locates_a_bad_url(
    tmp_path: Path,
) -> None:
    """``harnessc run SPEC`` runs a spec with ``durable:`` as its generated module does
    (the durable verbs are there); ``harnessc check`` names the line of a URL whose
    scheme durable runs cannot use."""
    spec = write_spec(
        tmp_path, SPEC.replace("session:\n  repo: postgres\n  url: ${DATABASE_URL}\n", "")
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DURABLE_URL": "sqlite:///.harnessc/d.sqlite"}

    def harnessc(*args: str) -> subprocess.CompletedProcess[str]:
        code = "import sys; from harnessc.cli import main; sys.exit(main())"
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    listed = harnessc("run", str(spec), "--", "--runs")
    assert listed.returncode == 2, listed.stderr
    assert "no durable runs yet" in listed.stderr
    spec.write_text(SPEC.replace("${DURABLE_URL:-sqlite:///.harnessc/durable.sqlite}", "mysql://x"))
    checked = harnessc("check", str(spec))
    assert checked.returncode == 1
    assert (
        "durable-demo.yaml:10:17: error: durable.database_url: must be" in checked.stderr
        and "not 'mysql'" in checked.stderr
    )
