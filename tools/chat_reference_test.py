#!/usr/bin/env python3
"""Reference test of `moex generate --chat` and `moex chat` on a tiny checkpoint given a
ChatML template: the prompt ids equal transformers' apply_chat_template(tokenize=True) (and
mlx-lm's render + encode), greedy answers equal mlx-lm's on those ids, and a scripted chat
session reuses the KV cache exactly: turn 2 runs only the tokens after the common prefix and
answers as a fresh `moex generate --prompt-ids` of the whole conversation; after /reset a turn
runs from position 0; a conversation that outgrows the context is refused with a message.

usage: chat_reference_test.py --moex BIN --work DIR
"""
import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

PRESET = "tiny-qwen3-moe"
N = 10  # answer tokens per turn
SYSTEM = "You are a terse assistant."
# Qwen2.5's ChatML layout: a default system turn, contents trimmed, the assistant header last.
TEMPLATE = """{%- if messages[0]['role'] == 'system' %}
{{- '<|im_start|>system\\n' + messages[0]['content'] | trim + '<|im_end|>\\n' }}
{%- set rest = messages[1:] %}
{%- else %}
{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}
{%- set rest = messages %}
{%- endif %}
{%- for message in rest %}
{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] | trim + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

failures = 0


def check(ok, what):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    failures += not ok


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(map(str, cmd))}\n{r.stderr}")
    return r


def common_prefix(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def tf_ids(tok, messages):
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(out, "keys"):  # transformers 5 returns a BatchEncoding
        out = out["input_ids"]
    return list(out)


def mlx_ids(tok, messages):
    # What mlx_lm.generate does with a chat template: render, then encode without specials.
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tok.encode(text, add_special_tokens=False)


class MlxGreedy:
    def __init__(self, d):
        import mlx.core as mx
        from mlx_lm import load
        self.mx = mx
        self.model, self.tok = load(str(d))
        self.model.set_dtype(mx.float32)
        self.stops = set(self.tok.eos_token_ids)

    def __call__(self, ids, n):
        from mlx_lm.models.cache import make_prompt_cache
        mx = self.mx
        cache = make_prompt_cache(self.model)
        logits = self.model(mx.array([ids]), cache=cache)[0, -1]
        out = []
        while True:
            t = int(mx.argmax(logits).item())
            out.append(t)
            if t in self.stops or len(out) == n:
                return out
            logits = self.model(mx.array([[t]]), cache=cache)[0, -1]


def moex_generate_ids(moex, d, work, ids, n):
    dump = work / "gen_ids.bin"
    run([moex, "generate", "-m", d, "--prompt-ids", ",".join(map(str, ids)), "-n", n,
         "--dump-logits", dump])
    return json.loads(Path(str(dump) + ".json").read_text())["generated_ids"]


def moex_chat(moex, d, work, script, extra=()):
    dump = work / "turns.json"
    dump.unlink(missing_ok=True)
    r = run([moex, "chat", "-m", d, "-n", N, "--dump-turns", dump, "-v", *extra], input=script)
    return (json.loads(dump.read_text()) if dump.exists() else []), r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    d = work / "model"
    run([a.moex, "make-model", "--preset", PRESET, "--dtype", "f32", "--out", d, "-q"])
    (d / "chat_template.jinja").write_text(TEMPLATE)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(d))
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    (d / "generation_config.json").write_text(
        json.dumps({"eos_token_id": [im_end, tok.eos_token_id]}))
    mlx = MlxGreedy(d)

    # (a) generate --chat --system: prompt ids and greedy answer.
    user = "  What is a mixture of experts?  "
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    dump = work / "chat_gen.bin"
    r = run([a.moex, "generate", "-m", d, "--chat", "--system", SYSTEM, "-p", user, "-n", N,
             "-v", "--dump-logits", dump])
    got = json.loads(Path(str(dump) + ".json").read_text())
    want = tf_ids(tok, msgs)
    check(got["prompt_ids"] == want, f"generate --chat prompt ids = transformers' ({len(want)})")
    check(mlx_ids(mlx.tok, msgs) == want, "mlx-lm's render + encode gives the same ids")
    m = re.search(r"prompt of (\d+) tokens", r.stderr)
    check(m is not None and int(m.group(1)) == len(want), "-v prints the prompt's token count")
    greedy = mlx(want, N)
    check(got["generated_ids"] == greedy,
          f"generate --chat greedy = mlx-lm's: {got['generated_ids']} vs {greedy}")

    # (b) a scripted session: two turns, /reset, one more.
    u1, u2, u3 = "hello there", "and how are you?", "a new conversation"
    turns, r = moex_chat(a.moex, d, work, f"{u1}\n{u2}\n/reset\n{u3}\n/exit\nnever read\n",
                         ["--system", SYSTEM])
    check(len(turns) == 3, f"three turns recorded ({len(turns)})")
    if len(turns) != 3:
        print(r.stderr)
        sys.exit(1)
    t1, t2, t3 = turns
    sys_msg = {"role": "system", "content": SYSTEM}
    conv1 = [sys_msg, {"role": "user", "content": u1}]
    check(t1["prompt_ids"] == tf_ids(tok, conv1) and t1["reused"] == 0 and
          t1["prefilled"] == len(t1["prompt_ids"]), "turn 1: transformers' ids, all run")
    check(t1["answer"] == tok.decode([t for t in t1["generated_ids"] if t not in mlx.stops]),
          "turn 1: the answer text is the decoded answer ids without the stop token")
    check(t1["generated_ids"] == mlx(t1["prompt_ids"], N), "turn 1: greedy = mlx-lm's")
    conv2 = conv1 + [{"role": "assistant", "content": t1["answer"]},
                     {"role": "user", "content": u2}]
    ids2 = t2["prompt_ids"]
    check(ids2 == tf_ids(tok, conv2), "turn 2: ids = transformers' of the 3-message conversation")
    # The engine holds turn 1's prompt and every answer token but the last (never run).
    held = t1["prompt_ids"] + t1["generated_ids"][:-1]
    lcp = common_prefix(held, ids2)
    keep = min(lcp, len(ids2) - 1)
    check(t2["reused"] == keep and t2["prefilled"] == len(ids2) - keep and keep > 0,
          f"turn 2: kept the common prefix ({t2['reused']} of {lcp}), ran {t2['prefilled']} "
          f"new tokens of {len(ids2)}")
    fresh = moex_generate_ids(a.moex, d, work, ids2, N)
    check(t2["generated_ids"] == fresh, f"turn 2: answer = fresh generate --prompt-ids "
          f"({t2['generated_ids']} vs {fresh})")
    check(fresh == mlx(ids2, N), "turn 2: fresh generate = mlx-lm's greedy")
    conv3 = [sys_msg, {"role": "user", "content": u3}]
    check(t3["prompt_ids"] == tf_ids(tok, conv3) and t3["reused"] == 0 and
          t3["prefilled"] == len(t3["prompt_ids"]), "after /reset: a new conversation from 0")
    check(t3["generated_ids"] == moex_generate_ids(a.moex, d, work, t3["prompt_ids"], N),
          "turn 3: answer = fresh generate --prompt-ids")
    check(r.stdout.count("\n") >= 3, "each answer ends in a newline on stdout")

    # (c) a small context: turn 1 stops at its end, turn 2 is refused, the session goes on.
    ctx = len(t1["prompt_ids"]) + 3
    turns, r = moex_chat(a.moex, d, work, f"{u1}\n{u2}\n", ["--system", SYSTEM, "--context", ctx])
    want = t1["generated_ids"][:4]  # 3 decode steps fill the context; the 4th token ends it
    want_stop = "stop_token" if want[-1] in mlx.stops else "context"
    check(len(turns) == 1 and turns[0]["stop"] == want_stop and
          turns[0]["generated_ids"] == want, "small context: turn 1 stops at the context limit")
    check("conversation is full" in r.stderr and "/reset" in r.stderr,
          "small context: turn 2 refused with a message suggesting /reset")

    # (d) Ctrl-C during an answer stops it; the session goes on with the next line.
    dump = work / "turns_sigint.json"
    # A small context ends turn 2's long answer soon.
    p = subprocess.Popen([a.moex, "chat", "-m", str(d), "-n", "3000", "--context", "300",
                          "--dump-turns", str(dump)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(f"{u1}\n".encode())
    p.stdin.flush()
    p.stdout.read(1)  # the answer is streaming: the handler is in place
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(f"{u2}\n/exit\n".encode(), timeout=300)
    turns = json.loads(dump.read_text()) if dump.exists() else []
    check(p.returncode == 0 and len(turns) == 2 and turns[0]["stop"] == "interrupted" and
          len(turns[0]["generated_ids"]) < 3000 and b"Ctrl-C" in err,
          f"Ctrl-C stops the answer and the chat goes on (exit {p.returncode}, "
          f"{[(len(t['generated_ids']), t['stop']) for t in turns]})")
    if len(turns) == 2:
        t1, t2 = turns
        held = t1["prompt_ids"] + t1["generated_ids"][:-1]
        keep = min(common_prefix(held, t2["prompt_ids"]), len(t2["prompt_ids"]) - 1)
        check(t2["reused"] == keep and t2["generated_ids"] == moex_generate_ids(
            a.moex, d, work, t2["prompt_ids"], len(t2["generated_ids"])) and
            t2["prompt_ids"] == tf_ids(tok, [{"role": "user", "content": u1},
                                             {"role": "assistant", "content": t1["answer"]},
                                             {"role": "user", "content": u2}]),
              "after Ctrl-C: the partial answer is the assistant turn, the cache is reused")

    # No chat template: exit code 2 naming the directory.
    bare = work / "bare"
    shutil.copytree(d, bare)
    (bare / "chat_template.jinja").unlink()
    for cmd in (["generate", "--chat", "-p", "hi"], ["chat"]):
        r = subprocess.run([a.moex, *cmd, "-m", str(bare)], capture_output=True, text=True,
                           input="hi\n")
        check(r.returncode == 2 and "no chat template" in r.stderr and str(bare) in r.stderr,
              f"{cmd[0]} without a chat template: exit 2 naming the directory")
    if failures:
        sys.exit(1)
    print("chat reference: all checks passed")


if __name__ == "__main__":
    main()
