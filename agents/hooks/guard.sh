#!/usr/bin/env bash
# Command hook written to Claude Code's protocol (it works unchanged in Claude Code):
# the PreToolUse event arrives as JSON on stdin, with the file tools' absolute path in
# tool_input.file_path. Exit 2 blocks the call and stderr is the reason shown to the
# model; exit 0 allows it. Blocks writes and edits to secrets and to git internals.
set -euo pipefail
path=$(python3 -c 'import json, sys; print(json.load(sys.stdin).get("tool_input", {}).get("file_path", ""))')
case "$path" in
  .env | *.env | */.env | *.env.* | *.pem | *id_rsa* | .git/* | */.git/*)
    echo "refusing to modify $path: it holds secrets or git internals" >&2
    exit 2
    ;;
esac
exit 0
