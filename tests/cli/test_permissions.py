"""The permission rule matcher (pure): Claude Code's Tool(specifier) syntax and modes."""

from __future__ import annotations

import pytest

from harnessc.runtime.permissions.rules import (
    PermissionError_,
    PermissionRules,
    decide,
    parse_rule,
    remembered_rule,
)

RULES = PermissionRules.from_config(
    {
        "allow": ["Bash(git status)", "Bash(pytest *)", "Read(**)", "Bash(npm run test:*)"],
        "ask": ["Bash(git push *)", "Write(**)", "Edit(**)"],
        "deny": ["Bash(rm -rf *)", "Read(./.env)", "Edit(secrets/**)"],
        "default": "ask",
    }
)
CWD = "/work/project"


def outcome(tool: str, mode: str = "default", **args: object) -> str:
    return decide(RULES, tool, args, mode=mode, cwd=CWD).outcome


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", "allow"),
        ("git  status", "allow"),
        ("pytest -q tests", "allow"),
        ("pytest", "allow"),
        ("npm run test:unit", "ask"),  # "test:*" is a prefix rule on the word "test"
        ("npm run test", "allow"),
        ("npm run test --watch", "allow"),
        ("git push", "ask"),
        ("rm -rf build", "deny"),
        ("git status && rm -rf /", "deny"),  # a chain is as strict as its worst part
        ("git status && pytest -q", "allow"),
        ("git status; curl x | sh", "ask"),
    ],
)
def test_bash_rules(command: str, expected: str) -> None:
    assert outcome("bash", command=command) == expected


def test_path_rules_and_the_tools_they_cover() -> None:
    assert outcome("read", path="src/a.py") == "allow"
    assert outcome("grep", path="src", pattern="x") == "allow"  # Read covers grep
    assert outcome("read", path=".env") == "deny"
    assert outcome("read", path="/work/project/.env") == "deny"
    assert outcome("write", path="notes.md") == "ask"
    assert outcome("edit", path="secrets/key.txt") == "deny"
    assert outcome("write", path="secrets/key.txt") == "deny"  # Edit covers write
    assert outcome("todo", op="list") == "ask"  # no rule: the default


def test_bare_names_match_at_any_depth_and_folders_cover_their_files() -> None:
    rules = PermissionRules.from_config({"deny": ["Read(.env)", "Read(build)"]})
    assert decide(rules, "read", {"path": "app/config/.env"}, cwd=CWD).outcome == "deny"
    assert decide(rules, "read", {"path": "build/out/x.o"}, cwd=CWD).outcome == "deny"
    assert decide(rules, "read", {"path": "src/build.py"}, cwd=CWD).outcome == "allow"


def test_modes() -> None:
    assert outcome("write", "accept-edits", path="notes.md") == "allow"
    assert outcome("bash", "accept-edits", command="git push") == "ask"
    assert outcome("bash", "plan", command="git status") == "deny"
    assert outcome("read", "read-only", path="a.py") == "allow"
    assert outcome("bash", "bypass", command="git push") == "allow"
    assert outcome("bash", "bypass", command="rm -rf /") == "deny"  # deny holds in every mode
    assert outcome("write", "acceptEdits", path="x") == "allow"  # Claude Code's spelling
    with pytest.raises(PermissionError_, match="unknown permission mode 'yolo'"):
        outcome("bash", "yolo", command="ls")


def test_remembered_always_rules_allow_the_same_call_again() -> None:
    always = remembered_rule("bash", {"command": "git push"})
    assert always.text == "Bash(git push)"
    allowed = decide(RULES, "bash", {"command": "git push"}, cwd=CWD, remembered=[always])
    assert allowed.outcome == "allow"
    other = decide(RULES, "bash", {"command": "git push -f"}, cwd=CWD, remembered=[always])
    assert other.outcome == "ask"


def test_bad_rules_are_named() -> None:
    with pytest.raises(PermissionError_, match=r"bad permission rule 'Bash\(\)'"):
        parse_rule("Bash()")
    with pytest.raises(PermissionError_, match="bad permission rule"):
        parse_rule("(oops")
    with pytest.raises(PermissionError_, match="permissions.default"):
        PermissionRules.from_config({"default": "maybe"})
    assert parse_rule("Glob(src/**)").tool == "find"
    assert parse_rule("mytool").specifier is None


def test_hooks_see_the_mode_as_claude_code_names_it() -> None:
    from types import SimpleNamespace

    from harnessc.runtime.permissions.gate import claude_permission_mode, permission_hook

    hook = permission_hook({"ask": ["Bash(*)"]}, "accept-edits")
    harness = SimpleNamespace(options=SimpleNamespace(hooks=[hook]))
    assert claude_permission_mode(harness) == "acceptEdits"
    hook.handler.set_mode("plan")
    assert claude_permission_mode(harness) == "plan"
    assert claude_permission_mode(SimpleNamespace(options=SimpleNamespace(hooks=[]))) == (
        "bypassPermissions"
    )


def test_server_wide_mcp_rules_name_every_tool_of_the_server() -> None:
    for rule in ("mcp__h", "mcp__h__*"):
        rules = PermissionRules.from_config({"deny": [rule]})
        assert decide(rules, "mcp__h__search", {}, cwd=CWD).outcome == "deny", rule
        assert decide(rules, "mcp__h__delete", {"id": 1}, cwd=CWD).outcome == "deny", rule
        assert decide(rules, "mcp__hx__search", {}, cwd=CWD).outcome == "allow", rule
        assert decide(rules, "bash", {"command": "ls"}, cwd=CWD).outcome == "allow", rule
    exact = PermissionRules.from_config({"deny": ["mcp__h__search"]})
    assert decide(exact, "mcp__h__search", {}, cwd=CWD).outcome == "deny"
    assert decide(exact, "mcp__h__list", {}, cwd=CWD).outcome == "allow"


def test_rules_naming_no_tool_are_refused_with_a_did_you_mean() -> None:
    from harnessc.runtime.permissions.rules import check_rule_tools

    def check(*rules: str, tools: tuple[str, ...] = ("mine",)) -> list[str]:
        return check_rule_tools(
            PermissionRules.from_config({"deny": list(rules)}), tools, ["notes_"]
        )

    fine = ("Bash(rm *)", "Read(./.env)", "grep", "mcp__h", "mcp__h__*", "mine", "notes_x")
    assert check(*fine) == []
    for rule, hint in [
        ("BASH(rm *)", "did you mean 'bash'?"),
        ("Bassh(rm *)", "did you mean 'Bash'?"),
        ("Bsh(git status)", "did you mean 'Bash'?"),
        ("mien", "did you mean 'mine'?"),
    ]:
        with pytest.raises(PermissionError_, match="names no known tool") as caught:
            check("Read(**)", rule)
        assert str(caught.value).startswith(f"permission rule {rule!r}")
        assert str(caught.value).endswith(hint)
    [warning] = check("WebFetch(domain:example.com)", "Bash")
    assert "Claude Code's WebFetch, which harnessc has not" in warning
