"""The checkpoint store below the agent: byte-for-byte restores, what is left out, the
stat cache, conflicts, the user's git left alone, and collection with sessions."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessc.runtime.checkpoints import CheckpointSettings, CheckpointStore, Workspace
from harnessc.runtime.checkpoints.restore import Change

from .conftest import tree_state


def _fill(ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "a.py").write_text("a = 1\n")
    (ws / "src" / "b.bin").write_bytes(bytes(range(256)) * 40)
    (ws / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(ws / "run.sh", 0o755)
    (ws / "private").write_text("secret-ish\n")
    os.chmod(ws / "private", 0o600)
    (ws / "empty").mkdir()
    os.chmod(ws / "empty", 0o750)
    os.symlink("src/pkg/a.py", ws / "link-to-file")
    os.symlink("src", ws / "link-to-dir")
    os.symlink("nowhere/at/all", ws / "dangling")
    os.mkdir(ws / os.fsdecode(b"caf\xe9-latin1"))  # a name that is not UTF-8
    (ws / os.fsdecode(b"caf\xe9-latin1") / "x").write_text("x\n")


def _mess_up(ws: Path) -> None:
    (ws / "src" / "pkg" / "a.py").write_text("a = 2  # edited\n")
    os.rename(ws / "src" / "b.bin", ws / "src" / "renamed.bin")
    os.remove(ws / "private")
    os.chmod(ws / "run.sh", 0o644)
    shutil.rmtree(ws / "empty")
    (ws / "empty").write_text("now a file\n")  # a folder became a file
    os.remove(ws / "link-to-file")
    os.mkdir(ws / "link-to-file")  # a link became a folder
    os.remove(ws / "dangling")
    os.symlink("elsewhere", ws / "dangling")  # retargeted
    (ws / "new" / "deep" / "er").mkdir(parents=True)
    (ws / "new" / "deep" / "er" / "f.txt").write_text("new\n")
    shutil.rmtree(ws / os.fsdecode(b"caf\xe9-latin1"))


def test_a_restore_brings_back_every_byte_mode_link_and_folder(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    _fill(ws)
    first = tree_state(ws)
    c1 = workspace.take("before", session_id="s1")
    _mess_up(ws)
    second = tree_state(ws)
    assert second != first
    c2 = workspace.take("after", session_id="s1")

    plan = workspace.plan(c1)
    assert not plan.conflicts
    assert "R src/renamed.bin -> src/b.bin" in plan.lines()
    with workspace.restore(plan) as outcome:
        assert not outcome.kept
    assert tree_state(ws) == first
    assert outcome.checkpoint.tree == c1.tree

    with workspace.restore(workspace.plan(c2)):  # and forward again
        pass
    assert tree_state(ws) == second
    with workspace.restore(workspace.plan(c2)) as again:  # nothing left to do
        assert not again.applied


def test_set_id_bits_are_not_restored(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "tool").write_text("#!/bin/sh\n")
    os.chmod(ws / "tool", 0o4755)
    if os.stat(ws / "tool").st_mode & 0o4000 == 0:
        pytest.skip("this file system drops set-user-ID bits")
    c1 = workspace.take()
    os.remove(ws / "tool")
    with workspace.restore(workspace.plan(c1)):
        pass
    assert oct(os.stat(ws / "tool").st_mode & 0o7777) == oct(0o755)


def test_gitignore_spec_exclude_and_size_limit_leave_out_and_say_so(
    store: CheckpointStore, ws: Path
) -> None:
    (ws / ".gitignore").write_text("*.log\nbuild/\n!keep.log\n")
    (ws / "app.log").write_text("noise")
    (ws / "keep.log").write_text("kept")
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_bytes(b"\0" * 10)
    (ws / "sub").mkdir()
    (ws / "sub" / ".gitignore").write_text("local.txt\n")
    (ws / "sub" / "local.txt").write_text("local")
    (ws / "sub" / "other.txt").write_text("other")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text("k")
    (ws / "big.dat").write_bytes(b"x" * 2000)
    os.mkfifo(ws / "pipe")
    workspace = Workspace(store, ws, CheckpointSettings(exclude=["secrets/"], max_file_bytes=1000))
    checkpoint = workspace.take()
    reasons = {s.path: s.reason for s in workspace.skipped(checkpoint)}
    assert reasons == {
        "app.log": "ignored by .gitignore",
        "build/": "ignored by .gitignore",
        "sub/local.txt": "ignored by sub/.gitignore",
        "secrets/": "ignored by the spec's checkpoints.exclude",
        "big.dat": "over the size limit (2000 > 1000 bytes)",
        "pipe": "not a file, folder or link",
    }
    assert checkpoint.skipped == len(reasons)

    # a restore never removes what the checkpoint left out, and never writes over it
    os.remove(ws / "keep.log")
    (ws / "build" / "more.o").write_text("more")
    (ws / ".gitignore").write_text("*.log\n!keep.log\n")  # build/ is recorded from now on
    later = workspace.take()
    assert "build/out.o" not in {s.path for s in workspace.skipped(later)}
    plan = workspace.plan(checkpoint)
    assert not any(c.path.startswith("build") for c in plan.changes)
    # the plan says what it leaves out, and why (the terminal, the API, the command)
    assert "~ big.dat: over the size limit (2000 > 1000 bytes); not rewound" in plan.lines()
    assert "6 path(s) left out, not rewound" in plan.summary()
    shown = {e["path"]: e["reason"] for e in plan.to_dict()["left_out"]}
    assert shown == reasons
    with workspace.restore(plan):
        pass
    assert (ws / "build" / "more.o").read_text() == "more"
    assert (ws / "keep.log").read_text() == "kept"
    assert (ws / "secrets" / "key").read_text() == "k"


def test_an_ignored_file_in_the_way_is_a_conflict(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "notes.txt").write_text("recorded\n")
    c1 = workspace.take()
    (ws / "notes.txt").unlink()
    (ws / ".gitignore").write_text("notes.txt\n")
    (ws / "notes.txt").write_text("the user's own, ignored now\n")
    plan = workspace.plan(c1)
    assert [c.path for c in plan.conflicts] == ["notes.txt"]
    with workspace.restore(plan) as outcome:
        assert [k.path for k in outcome.kept] == ["notes.txt"]
    assert (ws / "notes.txt").read_text() == "the user's own, ignored now\n"
    with workspace.restore(workspace.plan(c1), force=True) as outcome:
        assert not outcome.kept
    assert (ws / "notes.txt").read_text() == "recorded\n"


def test_an_unchanged_workspace_costs_a_stat_walk(workspace: Workspace, trusted_now: None) -> None:
    ws = Path(workspace.root)
    for i in range(300):
        folder = ws / f"d{i % 10}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n" * (i % 7 + 1))
    first = workspace.take()
    assert workspace.last_scan is not None and workspace.last_scan.read == 300
    objects = workspace.store.objects.written
    second = workspace.take()
    assert workspace.last_scan.read == 0
    assert second.tree == first.tree
    assert workspace.store.objects.written == objects  # nothing new stored
    (ws / "d3" / "f3.txt").write_text("changed\n")
    third = workspace.take()
    assert workspace.last_scan.read == 1
    assert third.tree != first.tree
    # one file, its folder's tree and the root's tree
    assert workspace.store.objects.written == objects + 3

    # a fresh process (a new Workspace) reads the cache from disk: still no reads
    workspace.close()
    again = Workspace(workspace.store, ws)
    assert again.take().tree == third.tree
    assert again.last_scan is not None and again.last_scan.read == 0


def test_a_file_written_just_before_a_checkpoint_is_read_again_next_time(
    workspace: Workspace,
) -> None:
    """Racily clean entries: a file whose times are as new as the read may change again
    within the same clock tick without its facts changing, so the next scan reads it."""
    ws = Path(workspace.root)
    (ws / "hot.txt").write_text("v1\n")
    workspace.take()
    workspace.take()
    assert workspace.last_scan is not None and workspace.last_scan.read == 1


def test_a_rewrite_keeping_size_and_mtime_is_seen(workspace: Workspace, trusted_now: None) -> None:
    ws = Path(workspace.root)
    target = ws / "same-size.txt"
    target.write_text("AAAA\n")
    c1 = workspace.take()
    st = os.stat(target)
    target.write_text("BBBB\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # the change time still moves
    c2 = workspace.take()
    assert c2.tree != c1.tree


def test_a_change_outside_the_agent_is_a_conflict_and_kept_unless_forced(
    workspace: Workspace,
) -> None:
    ws = Path(workspace.root)
    (ws / "mine.txt").write_text("agent v1\n")
    (ws / "theirs.txt").write_text("user v1\n")
    c1 = workspace.take()
    (ws / "mine.txt").write_text("agent v2\n")
    (ws / "theirs.txt").write_text("user v2, typed in an editor\n")
    plan = workspace.plan(c1, outside=["theirs.txt"])
    assert [(c.path, c.reason) for c in plan.conflicts] == [
        ("theirs.txt", "changed outside the agent since the checkpoint")
    ]
    assert "! theirs.txt: changed outside the agent since the checkpoint" in plan.lines()
    with workspace.restore(plan) as outcome:
        assert [k.path for k in outcome.kept] == ["theirs.txt"]
        assert outcome.checkpoint.kept == ["theirs.txt"]
    assert (ws / "mine.txt").read_text() == "agent v1\n"
    assert (ws / "theirs.txt").read_text() == "user v2, typed in an editor\n"
    with workspace.restore(workspace.plan(c1, outside=["theirs.txt"]), force=True):
        pass
    assert (ws / "theirs.txt").read_text() == "user v1\n"


def test_a_change_between_plan_and_restore_is_kept(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "f.txt").write_text("v1\n")
    c1 = workspace.take()
    (ws / "f.txt").write_text("v2\n")
    plan = workspace.plan(c1)
    (ws / "f.txt").write_text("v3, while the user read the diff\n")
    with workspace.restore(plan) as outcome:
        assert [(k.path, k.reason) for k in outcome.kept] == [
            ("f.txt", "changed since the rewind was planned")
        ]
    assert (ws / "f.txt").read_text() == "v3, while the user read the diff\n"


def test_a_folder_holding_a_kept_file_stays(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "keepme.txt").write_text("x")
    c1 = workspace.take()
    (ws / "made").mkdir()
    (ws / "made" / "by-agent.txt").write_text("a")
    (ws / "made" / "by-user.txt").write_text("u")
    plan = workspace.plan(c1, outside=["made/by-user.txt"])
    with workspace.restore(plan) as outcome:
        assert {k.path for k in outcome.kept} == {"made/by-user.txt", "made"}
    assert sorted(os.listdir(ws / "made")) == ["by-user.txt"]


def test_the_users_git_is_not_touched(workspace: Workspace) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    ws = Path(workspace.root)
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }

    def run(*args: str) -> str:
        return subprocess.run(
            [git, *args], cwd=ws, env=env, check=True, capture_output=True, text=True
        ).stdout

    run("init", "-q")
    (ws / "tracked.txt").write_text("v1\n")
    (ws / ".gitattributes").write_text("* text=auto eol=crlf\n")  # git would rewrite bytes
    run("add", "tracked.txt", ".gitattributes")
    run("commit", "-q", "-m", "one")
    (ws / "tracked.txt").write_text("staged\n")
    run("add", "tracked.txt")
    (ws / "tracked.txt").write_text("work tree\n")
    (ws / "untracked.txt").write_text("u\n")

    def git_state() -> dict[str, str]:
        out = {}
        for folder, _, files in os.walk(ws / ".git"):
            for name in files:
                path = os.path.join(folder, name)
                st = os.lstat(path)
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                out[os.path.relpath(path, ws)] = f"{digest} {st.st_mtime_ns}"
        return out

    status = run("status", "--porcelain")  # git refreshes its index here
    before_git = git_state()
    c1 = workspace.take()
    (ws / "tracked.txt").write_text("agent edit\n")
    (ws / "untracked.txt").unlink()
    with workspace.restore(workspace.plan(c1)):
        pass
    assert (ws / "tracked.txt").read_bytes() == b"work tree\n"  # no CRLF: byte for byte
    assert git_state() == before_git
    assert run("status", "--porcelain") == status
    assert run("stash", "list") == ""


def test_checkpoints_need_no_git(tmp_path: Path) -> None:
    """The store is harnessc's own: it works where no git is installed."""
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "a").write_text("1")
    code = (
        "import os, sys\n"
        "from harnessc.runtime.checkpoints import CheckpointStore, Workspace\n"
        "w = Workspace(CheckpointStore(sys.argv[2]), sys.argv[1])\n"
        "c = w.take()\n"
        "open(os.path.join(sys.argv[1], 'a'), 'w').write('2')\n"
        "with w.restore(w.plan(c)):\n"
        "    pass\n"
        "print(open(os.path.join(sys.argv[1], 'a')).read())\n"
    )
    env = {**os.environ, "PATH": str(tmp_path / "no-bin")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(ws), str(tmp_path / "s")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1\n"


def test_identical_content_is_stored_once(store: CheckpointStore, ws: Path) -> None:
    for i in range(20):
        (ws / f"copy{i}.txt").write_text("the same content\n" * 50)
    Workspace(store, ws).take(session_id="one")
    blobs = set(store.objects.ids())
    other = ws.parent / "ws2"
    shutil.copytree(ws, other)
    Workspace(store, other).take(session_id="two")
    # same files, same folder listings: the second workspace adds no object at all
    assert len(set(store.objects.ids()) - blobs) == 0


def test_checkpoints_go_with_their_sessions(store: CheckpointStore, tmp_path: Path) -> None:
    ws = tmp_path / "w"
    ws.mkdir()
    session_file = tmp_path / "session.jsonl"
    session_file.write_text("{}\n")
    workspace = Workspace(store, ws)
    (ws / "one.txt").write_text("only in session one's checkpoint\n")
    kept = workspace.take(session_id="kept", session_path=str(session_file))
    (ws / "one.txt").unlink()
    (ws / "two.txt").write_text("in both\n")
    workspace.take(session_id="deleted", session_path=str(tmp_path / "gone.jsonl"))
    workspace.take(session_id="forgotten")
    workspace.take(session_id="memory", in_memory=True)
    workspace.close()

    report = store.collect()  # gone.jsonl does not exist: that session is gone
    assert report.sessions == ["deleted"]
    assert {r.session_id for r in store.sessions()} == {"kept", "forgotten", "memory"}

    store.forget_session("kept")
    report = store.collect()
    assert report.objects > 0
    with pytest.raises(LookupError):
        Workspace(store, ws).plan(kept)

    # an in-memory session's checkpoints go once its process has ended
    refs = store.refs_path("memory")
    lines = refs.read_text().splitlines()
    lines[0] = lines[0].replace(str(os.getpid()), "999999999")
    refs.write_text("\n".join(lines) + "\n")
    assert store.collect().sessions == ["memory"]
    # what the workspace's stat cache names stays (a later checkpoint reuses it)
    assert Workspace(store, ws).take().files == 1


def test_a_collected_cache_entry_is_read_again(store: CheckpointStore, ws: Path) -> None:
    (ws / "f.txt").write_text("content\n")
    workspace = Workspace(store, ws)
    workspace.take(session_id="s")
    for oid in list(store.objects.ids()):
        store.objects.delete(oid)  # as a damaged or hand-cleaned store would be
    (store.root / "generation").write_text("99")
    checkpoint = workspace.take(session_id="s")
    assert store.objects.has(checkpoint.tree)
    assert Workspace(store, ws).plan(checkpoint).empty


def test_a_missing_object_refuses_the_restore_before_any_change(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    c1 = workspace.take()
    (ws / "a.txt").write_text("changed\n")
    (ws / "b.txt").write_text("changed too\n")
    plan = workspace.plan(c1)
    b_blob = next(c for c in plan.changes if c.path == "b.txt").new
    assert b_blob is not None
    path = workspace.store.objects.path(b_blob.oid)
    path.write_bytes(b"r" + b"tampered\n")
    with pytest.raises(ValueError, match="damaged"):
        with workspace.restore(plan):
            pass
    assert (ws / "a.txt").read_text() == "changed\n"  # untouched: refused whole
    assert not (workspace.folder / "journal").exists()


def test_change_lists_round_trip() -> None:
    from harnessc.runtime.checkpoints.trees import FILE, Node

    change = Change("a/b", None, Node(FILE, 0o644, 3, "0" * 64))
    assert Change.from_list(change.to_list()) == change
