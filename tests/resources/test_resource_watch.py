from __future__ import annotations

import asyncio
import logging
import shutil

from harnessc.runtime.resources import ResourceWatcher

WAIT_S = 5.0


def _skill(description: str, name: str = "alpha") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nBody of {description}.\n"


class Recorder:
    def __init__(self) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()

    def __call__(self, resources, diagnostics) -> None:
        self.queue.put_nowait((resources, diagnostics))

    async def next(self):
        return await asyncio.wait_for(self.queue.get(), WAIT_S)

    async def until(self, predicate):
        while True:
            resources, diagnostics = await self.next()
            if predicate(resources):
                return resources, diagnostics


def _descriptions(resources):
    return [s.description for s in resources.skills]


def test_edit_break_fix_delete_recreate(tmp_path, caplog):
    skills = tmp_path / "skills"
    (skills / "alpha").mkdir(parents=True)
    skill_file = skills / "alpha" / "SKILL.md"
    skill_file.write_text(_skill("v1"))
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "hello.md").write_text("Hello $1")

    async def scenario():
        rec = Recorder()
        watcher = ResourceWatcher([skills], [templates], rec, debounce_ms=50)
        await watcher.start()
        assert _descriptions(watcher.resources) == ["v1"]
        assert [t.content for t in watcher.resources.prompt_templates] == ["Hello $1"]

        skill_file.write_text(_skill("v2"))
        resources, diagnostics = await rec.until(lambda r: _descriptions(r) == ["v2"])
        assert diagnostics == []

        skill_file.write_text("---\nname: alpha\ndescription: 'unterminated\n---\n")
        resources, diagnostics = await rec.until(lambda r: r.diagnostics)
        assert _descriptions(resources) == ["v2"]  # last good version kept
        assert diagnostics[0].severity == "error" and "not closed" in diagnostics[0].message
        assert "kept the previous version of skill 'alpha'" in diagnostics[1].message

        skill_file.write_text(_skill("v3"))
        resources, diagnostics = await rec.until(lambda r: _descriptions(r) == ["v3"])
        assert diagnostics == []

        (templates / "hello.md").write_text("Hi $1")
        resources, _ = await rec.until(
            lambda r: [t.content for t in r.prompt_templates] == ["Hi $1"]
        )

        shutil.rmtree(skills)
        resources, diagnostics = await rec.until(lambda r: not r.skills)
        assert any("does not exist" in d.message for d in diagnostics)

        (skills / "beta").mkdir(parents=True)
        (skills / "beta" / "SKILL.md").write_text(_skill("b1", name="beta"))
        await rec.until(lambda r: _descriptions(r) == ["b1"])
        (skills / "beta" / "SKILL.md").write_text(_skill("b2", name="beta"))
        await rec.until(lambda r: _descriptions(r) == ["b2"])  # watched again after recreate

        await watcher.stop()
        assert not watcher.running
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert others == []

    with caplog.at_level(logging.WARNING, logger="asyncio"):
        asyncio.run(scenario())
    assert not [r for r in caplog.records if r.name == "asyncio"]


def test_folder_missing_at_start_and_async_callback(tmp_path):
    skills = tmp_path / "later"
    seen: list[list[str]] = []
    done = asyncio.Event

    async def scenario():
        changed = done()

        async def on_change(resources, diagnostics):
            await asyncio.sleep(0)
            seen.append(_descriptions(resources))
            if resources.skills:
                changed.set()

        watcher = ResourceWatcher([skills], [], on_change, debounce_ms=20, poll_interval_ms=50)
        await watcher.start()
        assert watcher.resources.skills == []
        assert watcher.resources.diagnostics[0].message == "skills path does not exist"
        (skills / "gamma").mkdir(parents=True)
        (skills / "gamma" / "SKILL.md").write_text(_skill("g", name="gamma"))
        await asyncio.wait_for(changed.wait(), WAIT_S)
        await watcher.stop()
        await watcher.stop()  # idempotent

    asyncio.run(scenario())
    assert seen[-1] == ["g"]


def test_failing_callback_does_not_stop_watching(tmp_path):
    skills = tmp_path / "skills"
    (skills / "alpha").mkdir(parents=True)
    (skills / "alpha" / "SKILL.md").write_text(_skill("v1"))
    calls: list[str] = []

    async def scenario():
        got_two = asyncio.Event()

        def on_change(resources, diagnostics):
            calls.append(resources.skills[0].description)
            if len(calls) == 2:
                got_two.set()
            raise RuntimeError("listener bug")

        watcher = ResourceWatcher([skills], [], on_change)
        await watcher.start()
        (skills / "alpha" / "SKILL.md").write_text(_skill("v2"))
        for _ in range(100):
            if calls:
                break
            await asyncio.sleep(0.05)
        (skills / "alpha" / "SKILL.md").write_text(_skill("v3"))
        await asyncio.wait_for(got_two.wait(), WAIT_S)
        await watcher.stop()

    asyncio.run(scenario())
    assert calls == ["v2", "v3"]


def test_reload_without_watching_keeps_last_good(tmp_path):
    templates = tmp_path / "t"
    templates.mkdir()
    (templates / "a.md").write_text("---\ndescription: ok\n---\nA")
    watcher = ResourceWatcher([], [templates], lambda r, d: None)
    first = watcher.reload()
    assert [t.description for t in first.prompt_templates] == ["ok"]
    (templates / "a.md").write_text("---\ndescription: [bad\n---\nA")
    second = watcher.reload()
    assert [t.description for t in second.prompt_templates] == ["ok"]
    assert second.diagnostics[0].severity == "error"
    (templates / "a.md").unlink()
    assert watcher.reload().prompt_templates == []  # deleted: no last good version
