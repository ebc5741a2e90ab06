#!/usr/bin/env bash
# `moex chat` in a terminal, driven through tmux as a person would use it: a pasted block of
# 18 KB over many lines arrives whole as one turn (the terminal's 4 KB line limit cut it
# before), the line can be edited with the arrow keys, Up recalls the last message, typed text
# spans lines between two lines of """, and Ctrl-C while a long prompt is read in stops it and
# drops the message. What each turn received is read back from --dump-turns.
# Usage: chat_terminal_test.sh MOEX_EXE. Exit 77 (skipped) without tmux or without readline in
# the build (`moex chat -v` says which reader it uses).
set -uo pipefail
moex="$1"
command -v tmux >/dev/null || { echo "chat_terminal_test: no tmux; skipped"; exit 77; }
tmp="$(mktemp -d /tmp/moex_chat_tty.XXXXXX)"
sock="$tmp/tmux.sock"
session=chat
tm() { tmux -S "$sock" "$@"; }
cleanup() { tm kill-server 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fails=0
check() {  # check NAME COMMAND...: prints ok/FAIL
  if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}

"$moex" make-model --preset tiny-qwen3-moe --dtype f32 --out "$tmp/m" -q >/dev/null || exit 2
# Room for the long pastes (the preset says 4,096 positions; RoPE goes on past it).
python3 - "$tmp/m/config.json" <<'EOF'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["max_position_embeddings"] = 65536
json.dump(cfg, open(sys.argv[1], "w"), indent=1)
EOF
cat > "$tmp/m/chat_template.jinja" <<'EOF'
{%- for message in messages %}
{{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
EOF
# The block to paste: 300 lines of 60 characters (18,300 bytes with the newlines).
python3 - "$tmp/paste.txt" <<'EOF'
import sys
lines = [f"{i:03d} " + "the quick brown fox jumps over the lazy dog, " * 2 for i in range(300)]
open(sys.argv[1], "w").write("\n".join(l[:60] for l in lines))
EOF

turns() {  # number of turns in the dump
  python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$tmp/turns.json" \
    2>/dev/null || echo 0
}
wait_turns() {  # wait_turns N: until the dump has N turns (120 s at most: an 11k-token prompt
  # takes 9 s on a quiet 2-core machine, 27 s beside a build)
  for _ in $(seq 1200); do [ "$(turns)" -ge "$1" ] && return 0; sleep 0.1; done
  echo "FAIL timed out waiting for turn $1; screen:"; tm capture-pane -p -t $session
  fails=$((fails + 1))
  return 1
}
wait_prompt() {  # until the last non-empty screen line is the prompt "> " (30 s at most)
  for _ in $(seq 300); do
    tm capture-pane -p -t $session | grep -v '^$' | tail -1 | grep -q '^> *$' && return 0
    sleep 0.1
  done
  echo "FAIL timed out waiting for the prompt; screen:"; tm capture-pane -p -t $session
  fails=$((fails + 1))
  return 1
}
user_of() {  # user_of K: turn K's user text
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[int(sys.argv[2])]['user'], end='')" \
    "$tmp/turns.json" "$1"
}

tm new-session -d -s $session -x 160 -y 40 \
  "'$moex' chat -m '$tmp/m' -n 4 --context 65536 -v --dump-turns '$tmp/turns.json' 2> '$tmp/err.txt'; sleep 30" || { echo "chat_terminal_test: tmux could not start"; exit 2; }
wait_prompt || exit 1
if ! grep -q 'input read as readline' "$tmp/err.txt"; then
  echo "chat_terminal_test: this moex reads plain lines (no readline in the build); skipped"
  cat "$tmp/err.txt"
  exit 77
fi

# 1. A bracketed paste (tmux wraps it in the paste markers when the program asked for them).
tm load-buffer "$tmp/paste.txt"
tm paste-buffer -p -t $session
tm send-keys -t $session Enter
wait_turns 1 && wait_prompt
check "an 18 KB paste of 300 lines is one turn, whole" \
  test "$(user_of 0)" = "$(cat "$tmp/paste.txt")"

# 2. Editing: "helo", Left, "l" is "hello".
tm send-keys -t $session 'helo' Left 'l' Enter
wait_turns 2 && wait_prompt
check "the arrow keys edit the line" test "$(user_of 1)" = "hello"

# 3. History: Up recalls "hello"; End, then " again".
tm send-keys -t $session Up End ' again' Enter
wait_turns 3 && wait_prompt
check "Up recalls the last message" test "$(user_of 2)" = "hello again"

# 4. Typed lines between two fences.
tm send-keys -t $session '"""' Enter 'line one' Enter 'line two' Enter '"""' Enter
wait_turns 4 && wait_prompt
check 'typed text spans lines between two lines of """' \
  test "$(user_of 3)" = "$(printf 'line one\nline two')"

# 5. Ctrl-C while a long prompt is read in: the paste twice over (~37 KB, ~22k tokens) in one
# turn, Ctrl-C once its prefill has started (chat -v says so); the message is dropped and the
# chat goes on.
for _ in 1 2; do cat "$tmp/paste.txt"; echo; done > "$tmp/long.txt"
tm load-buffer "$tmp/long.txt"
tm paste-buffer -p -t $session
tm send-keys -t $session Enter
for _ in $(seq 600); do grep -q 'turn 5: running' "$tmp/err.txt" && break; sleep 0.1; done
tm send-keys -t $session C-c
wait_prompt
check "Ctrl-C stops a prompt being read in" grep -q 'chat: prompt stopped (Ctrl-C)' "$tmp/err.txt"
tm send-keys -t $session 'still here' Enter
wait_turns 5 && wait_prompt
check "the chat goes on after it, without the dropped message" test "$(user_of 4)" = "still here"

tm send-keys -t $session '/exit' Enter
echo "chat_terminal_test: $fails failed"
[ $fails -eq 0 ] || { echo "moex chat's stderr (the end):"; tail -c 2000 "$tmp/err.txt"; }
[ $fails -eq 0 ]
