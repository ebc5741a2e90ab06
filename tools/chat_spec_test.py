#!/usr/bin/env python3
"""`moex chat --spec ngram` against plain `moex chat`, on a tiny model with attention only
(tiny-qwen3-moe) and on ones with recurrent states (tiny-qwen3-next: Gated DeltaNet; tiny-lfm2-moe:
short conv): a scripted three-turn conversation gives the same greedy answers, prompt ids and
reuse counts turn by turn, with two draft settings. Random weights never repeat text on their
own, so a logit bias keeps the answers among the ids of a phrase the user turns repeat; drafts
are then found in the conversation and must be accepted (and, on the recurrent models,
rejected and rewound) for the test to pass. Bad --spec values are refused naming the flag.

usage: chat_spec_test.py --moex BIN --work DIR
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from chat_reference_test import TEMPLATE  # noqa: E402

PRESETS = ["tiny-qwen3-moe", "tiny-qwen3-next", "tiny-lfm2-moe"]
RECURRENT = {"tiny-qwen3-next", "tiny-lfm2-moe"}
PHRASE = "alpha beta gamma delta"
SCRIPT = (f"Repeat after me: {PHRASE} {PHRASE}\n"
          f"Again, {PHRASE}, then {PHRASE} once more\n"
          f"{PHRASE} {PHRASE} {PHRASE}\n")
SETTINGS = [["--spec", "ngram"],
            ["--spec", "ngram", "--spec-draft", "5", "--spec-ngram-min", "1",
             "--spec-ngram-max", "2"]]

failures = 0


def check(ok, what):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    failures += not ok


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def chat(moex, d, work, bias, extra):
    dump = work / "turns.json"
    dump.unlink(missing_ok=True)
    r = run([moex, "chat", "-m", d, "-n", "24", "--temp", "0", "--logit-bias", bias,
             "--dump-turns", dump, "-v", *extra], input=SCRIPT)
    if r.returncode != 0:
        raise SystemExit(f"moex chat {' '.join(extra)} failed ({r.returncode}):\n{r.stderr}")
    return json.loads(dump.read_text())


def chat_mtp(moex, work, preset):
    """--spec mtp on `preset` with a random MTP module (src/generate/reference/
    mtp_module.py): the module's state follows the session across turns (prefix reuse, the
    answer's kept tokens; tiny-qwen3-next's recurrent session starts over where it cannot cut,
    and its rejected passes rerun), and every turn equals plain chat's. A random module's drafts are
    rejected; acceptance is checked where drafts can be right (generate_unit_test MtpFamilies,
    docs/speculative.md)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "generate" / "reference"))
    try:
        import mtp_module
    except ImportError as e:
        check(False, f"{preset} --spec mtp: cannot import the MTP module writer ({e})")
        return
    from tokenizers import Tokenizer
    d = work / f"{preset}-mtp"
    r = run([moex, "make-model", "--preset", preset, "--out", d, "-q"])
    if r.returncode != 0:
        raise SystemExit(f"make-model {preset} failed:\n{r.stderr}")
    mtp_module.add_random_mtp(str(d), seed=5)
    (d / "chat_template.jinja").write_text(TEMPLATE)
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    (d / "generation_config.json").write_text(
        json.dumps({"eos_token_id": [tok.token_to_id("<|im_end|>")]}))
    ids = sorted(set(tok.encode(" " + PHRASE, add_special_tokens=False).ids))
    bias = ",".join(f"{i}=30" for i in ids)
    plain = chat(moex, d, work, bias, [])
    for extra in (["--spec", "mtp"], ["--spec", "mtp", "--spec-draft", "3"]):
        got = chat(moex, d, work, bias, extra)
        what = f"{preset} {' '.join(extra)}"
        same = len(got) == len(plain) == 3 and all(
            {k: v for k, v in g.items() if k != "spec"} == p for g, p in zip(got, plain))
        check(same, f"{what}: every turn's answer ids, text, prompt ids and reuse equal plain "
              "chat's")
        drafted = sum(t["spec"]["drafted"] for t in got)
        reused = sum(t["reused"] for t in got[1:]) if got and "reused" in got[0] else -1
        check(drafted > 0, f"{what}: the module drafted ({drafted} drafts; prompt tokens "
              f"reused after the first turn: {reused})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    from tokenizers import Tokenizer
    for preset in PRESETS:
        d = work / preset
        r = run([a.moex, "make-model", "--preset", preset, "--out", d, "-q"])
        if r.returncode != 0:
            raise SystemExit(f"make-model {preset} failed:\n{r.stderr}")
        (d / "chat_template.jinja").write_text(TEMPLATE)
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        im_end = tok.token_to_id("<|im_end|>")
        (d / "generation_config.json").write_text(json.dumps({"eos_token_id": [im_end]}))
        ids = sorted(set(tok.encode(" " + PHRASE, add_special_tokens=False).ids))
        bias = ",".join(f"{i}=30" for i in ids)
        plain = chat(a.moex, d, work, bias, [])
        check(len(plain) == 3 and all(len(t["generated_ids"]) > 0 for t in plain),
              f"{preset}: plain chat answered 3 turns")
        rejected = rewound = 0
        for extra in SETTINGS:
            got = chat(a.moex, d, work, bias, extra)
            what = f"{preset} {' '.join(extra)}"
            same = len(got) == len(plain) and all(
                {k: v for k, v in g.items() if k != "spec"} == p for g, p in zip(got, plain))
            check(same, f"{what}: every turn's answer ids, text, prompt ids and reuse equal "
                  "plain chat's")
            if not same:
                for g, p in zip(got, plain):
                    print(f"    plain {p['generated_ids']}\n    spec  {g['generated_ids']}")
            accepted = sum(t["spec"]["accepted"] for t in got)
            drafted = sum(t["spec"]["drafted"] for t in got)
            reruns = sum(t["spec"]["reruns"] for t in got)
            check(accepted > 0, f"{what}: drafts accepted ({accepted} of {drafted})")
            rejected += drafted - accepted
            rewound += reruns
        # The short suffixes of the second setting guess wrong often enough.
        check(rejected > 0, f"{preset}: drafts rejected ({rejected})")
        if preset in RECURRENT:
            check(rewound > 0, f"{preset}: rejected passes rewound the recurrent states "
                  f"({rewound} reruns)")

    for preset in ("tiny-glm4-moe", "tiny-qwen3-next"):
        chat_mtp(a.moex, work, preset)

    d = work / PRESETS[0]
    for flags, name in [(["--spec", "ngram", "--spec-draft", "0"], "--spec-draft"),
                        (["--spec", "medusa"], "--spec"),
                        (["--spec-ngram-min", "2"], "--spec-ngram-min"),
                        (["--spec", "ngram", "--spec-ngram-min", "3", "--spec-ngram-max", "2"],
                         "--spec-ngram-max")]:
        r = run([a.moex, "chat", "-m", d, *flags], input="hi\n")
        check(r.returncode != 0 and name in r.stderr,
              f"chat {' '.join(flags)}: refused naming {name} ({r.stderr.strip()[:120]})")
    print("chat_spec_test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
