#!/usr/bin/env bash
# Smoke test in a real terminal: start the studio in tmux, step twice, check the captured screen, quit
# (the process ends with status 0).
#
#   scripts/tmux_smoke.sh [TREE]        (default sample_trees/text_pipeline.py)
#
# Exit status 0 when every check passed; otherwise the last captured screen is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
tree="${1:-sample_trees/text_pipeline.py}"
session="jianmu-smoke-$$"
screen=""
tmux() { command tmux -L "$session" -f /dev/null "$@"; }  # a server of its own: nobody else's sessions

tmux new-session -d -s "$session" -x 160 -y 48 \
    "env -u JIANMU_BASE_URL -u OPENAI_BASE_URL -u COLUMNS -u LINES .venv/bin/jianmu-studio $tree; echo \"studio exited: \$?\"; sleep 5"
trap 'tmux kill-server 2>/dev/null || true; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$session"' EXIT

expect() {  # wait up to 10 s for text on the screen
    for _ in $(seq 50); do
        screen="$(tmux capture-pane -p -t "$session")"
        grep -qF -- "$1" <<<"$screen" && return 0
        sleep 0.2
    done
    printf 'tmux smoke: never saw %q on the screen:\n%s\n' "$1" "$screen" >&2
    exit 1
}

expect " ready "
expect "○ Normalize"
tmux send-keys -t "$session" n
expect "tick 1 "
expect "● Normalize"
sleep 0.5  # Normalize's async work finishes between ticks
tmux send-keys -t "$session" n
expect "tick 2 "
expect "✔ Normalize"
expect "normalized_text = \"the quick brown fox"
tmux send-keys -t "$session" c
expect " finished "
expect "✔ TextPipeline"
tmux send-keys -t "$session" q
expect "studio exited: 0"  # the process itself ended (not only its screen), with status 0
echo "tmux smoke: ok"
