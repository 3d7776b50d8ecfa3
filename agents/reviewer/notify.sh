#!/usr/bin/env bash
# Command hook on agent_end: appends one line to $REVIEW_NOTIFY_FILE when it is set.
set -euo pipefail
event=$(cat)
if [ -n "${REVIEW_NOTIFY_FILE:-}" ]; then
  session=$(printf '%s' "$event" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("session_id", ""))')
  printf 'review finished: session %s\n' "$session" >> "$REVIEW_NOTIFY_FILE"
fi
exit 0
