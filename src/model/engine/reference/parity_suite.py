# Several parity.py cases in one Python process: mlx-lm's import (~1.5-2 s of these CPUs, most
# of a small case) is paid once per suite instead of once per case. The cases come from a file
# engine_reference.cmake writes, one per line: the case's name, then parity.py's arguments after
# MOEX_EXE MODEL_DIR, separated by tabs. Each case's model directory is MODELS_ROOT/<name>.
# Usage: parity_suite.py MOEX_EXE MODELS_ROOT CASES_FILE [--only NAME ...]
# Exit 0: every case passed; 1: a case mismatched; 2: a case could not run (moex, make-model or
# mlx_lm convert failed, or a case name given to --only is not in the file); 77: mlx-lm is
# unavailable (parity.py's import).
import argparse
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity  # noqa: E402  (exits 77 itself when mlx-lm is missing)


def read_cases(path):
    cases = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                name, *args = line.split("\t")
                cases.append((name, args))
    return cases


def run_case(moex, model_dir, args):
    """parity.run on one case; a SystemExit from its helpers is the case's status, and an
    exception (mlx-lm refusing the checkpoint, a bug here) fails the case, not the suite."""
    try:
        return parity.run([moex, model_dir] + args)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    except Exception:
        traceback.print_exc(file=sys.stdout)
        return 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moex")
    ap.add_argument("models_root")
    ap.add_argument("cases")
    ap.add_argument("--only", action="append", default=[], help="run only the named case(s)")
    a = ap.parse_args()
    cases = read_cases(a.cases)
    names = {n for n, _ in cases}
    unknown = [n for n in a.only if n not in names]
    if unknown:
        print(f"parity_suite: no case named {', '.join(unknown)} in {a.cases}; it has "
              f"{', '.join(sorted(names))}")
        return 2
    if a.only:
        cases = [c for c in cases if c[0] in a.only]
    results = []
    for name, args in cases:
        print(f"== parity case {name}: parity.py MOEX MODEL {' '.join(args)}", flush=True)
        t0 = time.monotonic()
        rc = run_case(a.moex, os.path.join(a.models_root, name), args)
        took = time.monotonic() - t0
        verdict = {0: "passed", 1: "FAILED (mismatch)"}.get(rc, f"FAILED (could not run: {rc})")
        print(f"== parity case {name}: {verdict} in {took:.1f} s", flush=True)
        results.append((name, rc))
    failed = [(n, rc) for n, rc in results if rc != 0]
    print(f"parity_suite: {len(results) - len(failed)} of {len(results)} cases passed"
          + (": failed " + ", ".join(n for n, _ in failed) if failed else ""))
    if any(rc not in (0, 1) for _, rc in failed):
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
