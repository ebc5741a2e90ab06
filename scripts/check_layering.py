#!/usr/bin/env python3
"""The layering rule, checked: a production source under src/<dir>/ includes headers only from
its own directory and from the directories below it in LAYERS. Dependencies then point one way
(serve -> generate -> model -> moe -> backend -> kernels -> core), as docs/architecture.md states.

Tests (*_test.cc, *_test_util.h), reference tools (reference/ folders) and fuzz targets may
reach further: a lower layer's test may compare against a higher layer's reference op.

    python3 scripts/check_layering.py [--self-test] [SRC_DIR]   # exit 1 listing each violation
"""
import os
import re
import sys

# Each directory and the directories it may include (besides itself).
LAYERS = {
    "core": set(),
    "quant": {"core"},
    "dist": {"core"},
    "tokenizer": {"core"},
    "chat": {"core"},
    "harness": {"core"},
    "io": {"core", "quant"},
    "kernels": {"core", "quant"},
    "backend": {"core", "quant", "kernels"},
    "moe": {"core", "quant", "kernels", "backend", "harness"},
    # chat: a GGUF model's chat template (model/gguf/) is read with the model's other metadata.
    "model": {"core", "quant", "io", "dist", "tokenizer", "chat", "kernels", "backend", "moe"},
    "eval": {"core", "harness"},
    "generate": {"core", "quant", "io", "tokenizer", "chat", "kernels", "backend", "moe", "model"},
    "serve": {"core", "quant", "io", "tokenizer", "chat", "kernels", "backend", "moe", "model",
              "generate", "harness"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/')


def is_production(rel):
    name = os.path.basename(rel)
    return not (name.endswith("_test.cc") or name.endswith("_test_util.h")
                or name.endswith("_test_util.cc") or "/reference/" in rel or "/testing/" in rel)


def violations(src):
    found = []
    for top in sorted(os.listdir(src)):
        base = os.path.join(src, top)
        if not os.path.isdir(base):
            continue
        if top not in LAYERS:
            found.append(f"src/{top}/: a directory the layering rule does not know; add it to "
                         f"LAYERS in {__file__} with what it may include")
            continue
        for root, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith((".h", ".cc", ".cu", ".cuh", ".inc")):
                    continue
                path = os.path.join(root, f)
                rel = os.path.relpath(path, os.path.dirname(src))
                if not is_production(rel):
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        dep = m.group(1)
                        if dep == top or dep not in LAYERS:  # own dir, or a third-party path
                            continue
                        if dep not in LAYERS[top]:
                            found.append(f"{rel}:{n}: src/{top} includes \"{dep}/...\", which "
                                         f"is not below it (allowed: {', '.join(sorted(LAYERS[top])) or 'nothing'})")
    return found


def self_test():
    """The check on a made-up tree: an upward include is found, the allowed ones are not."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src")
        for top, text in {"core": '#include "model/engine.h"\n#include "core/x.h"\n',
                          "moe": '#include "kernels/qdot.h"\n#include <vector>\n',
                          "kernels": '#include "moe/router.h"\n'}.items():
            os.makedirs(os.path.join(src, top))
            with open(os.path.join(src, top, "a.cc"), "w") as f:
                f.write(text)
            with open(os.path.join(src, top, "a_test.cc"), "w") as f:
                f.write('#include "serve/x.h"\n')  # tests may reach further
        got = violations(src)
        want = ["src/core/a.cc:1", "src/kernels/a.cc:1"]
        ok = len(got) == 2 and all(any(g.startswith(w) for g in got) for w in want)
        print("self-test:", "ok" if ok else f"FAILED: {got}")
        return ok


def main():
    checked = self_test() if sys.argv[1:2] == ["--self-test"] else True
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                            "src")
    found = violations(os.path.abspath(src))
    for v in found:
        print(v)
    print(f"layering: {len(found)} violation(s)")
    return 1 if found or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
