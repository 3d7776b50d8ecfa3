#!/usr/bin/env bash
# Command hook for bash calls (Claude Code protocol: the event is JSON on stdin).
# Allows read-only commands only; exit 2 blocks, and stderr tells the model why.
set -euo pipefail
command=$(python3 -c 'import json, sys; print(json.load(sys.stdin).get("tool_input", {}).get("command", ""))')
if printf '%s' "$command" | grep -Eq '[;&|`$<>]|\brm\b|\bmv\b|\bcp\b|\bchmod\b|\bsed +-i|\btee\b'; then
  echo "the reviewer may only run single read-only commands (git diff/log/show/status, ls, cat, grep, wc, head, tail)" >&2
  exit 2
fi
case "$command" in
  "git diff"* | "git log"* | "git show"* | "git status"* | ls* | cat\ * | grep\ * | rg\ * | wc\ * | head\ * | tail\ * | "")
    exit 0
    ;;
esac
echo "not a read-only command: $command" >&2
exit 2
