"""`moex generate --spec mtp` on a GGUF file against the checkpoint directory it was written
from: llama.cpp's converter keeps GLM-4.5's multi-token-prediction module as one more block plus
blk.N.nextn.*, and moex binds it under the directory's names. The directory is a float16
tiny-glm4-moe with a random module (mtp_module.add_random_mtp); its F16 twin
(tools/peers/gguf_twin.py, which writes the module as the converter does) holds the same
values, so the main model's tokens and every first draft's logits must be equal bit for bit.

    mtp_gguf_test.py MOEX_EXE WORKDIR
Exit 0: equal; 1: not; 2: moex failed; 77: mlx-lm or gguf-py is unavailable.
"""
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "peers"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import mtp_module  # noqa: E402
    from gguf_twin import twin  # noqa: E402
    from mtp_parity_test import moex, report  # noqa: E402
except ImportError as e:
    print(f"mtp_gguf: cannot import mlx-lm / gguf-py: {e}")
    sys.exit(77)

PROMPT = ",".join(str((i * 37 + 11) % 1024) for i in range(40))


def main(argv):
    exe, work = argv[0], Path(argv[1])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    ckpt = work / "tiny-glm4-moe-f16"
    moex([exe, "make-model", "--preset", "tiny-glm4-moe", "--dtype", "f16", "--bits", "0",
          "--out", str(ckpt), "-q"], "make-model")
    mtp_module.add_random_mtp(str(ckpt), seed=3)
    gguf = work / "tiny-glm4-moe-f16.gguf"
    twin(str(ckpt), str(gguf), mode="f16", progress=False)
    bad, runs = [], {}
    for name, path in (("directory", ckpt), ("gguf", gguf)):
        drafts = work / f"{name}.drafts.bin"
        r = moex([exe, "generate", "-m", str(path), "--prompt-ids", PROMPT, "-n", "24",
                  "--ignore-eos", "--spec", "mtp", "--dump-draft-logits", str(drafts)],
                 f"--spec mtp on the {name}")
        runs[name] = (r.stdout.split(), drafts.read_bytes())
        print(f"{name}: {len(drafts.read_bytes())} bytes of draft logits, "
              + next((l for l in r.stderr.splitlines() if l.startswith("speculative")), ""))
    if runs["directory"][0] != runs["gguf"][0]:
        bad.append("the generated ids differ")
    if not runs["directory"][1] or runs["directory"][1] != runs["gguf"][1]:
        bad.append("the draft logits differ (or none were written)")
    # Without --spec mtp the module's tensors are left unread, as before.
    moex([exe, "generate", "-m", str(gguf), "--prompt-ids", PROMPT, "-n", "2"], "plain run")
    return report("mtp_gguf", bad)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
