# Rewrites an MLX-layout float checkpoint (e.g. `moex make-model --bits 0 --dtype bf16`) into
# the Hugging Face per-expert layout (experts.{e}.{gate,up,down}_proj.weight) that `moex
# convert` stacks again, tensor by tensor through mmap: the large input for the converter's
# resident-memory measurement (docs/convert.md). Only the layouts of qwen3_moe-like families
# (mlp.switch_mlp.* -> mlp.experts.{e}.*) are handled.
# Usage: split_experts.py MLX_DIR OUT_DIR
import glob
import json
import mmap
import os
import shutil
import struct
import sys

SIZES = {"BF16": 2, "F16": 2, "F32": 4}


def tensors_of(path):
    f = open(path, "rb")
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return [(k, v, m, 8 + n) for k, v in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])]


def pieces(name, info):
    """[(new name, shape, byte offset within the tensor, bytes)] of one stored tensor."""
    shape, es = info["shape"], SIZES[info["dtype"]]
    if ".mlp.switch_mlp." not in name:
        n = es
        for d in shape:
            n *= d
        return [(name, shape, 0, n)]
    one = es
    for d in shape[1:]:
        one *= d
    return [(name.replace(".switch_mlp.", f".experts.{e}."), shape[1:], e * one, one)
            for e in range(shape[0])]


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out)
    for f in sorted(glob.glob(os.path.join(src, "*.safetensors"))):
        items = tensors_of(f)
        header, off, plan = {}, 0, []
        for name, info, m, base in items:
            for new, shape, rel, nb in pieces(name, info):
                header[new] = {"dtype": info["dtype"], "shape": shape, "data_offsets": [off, off + nb]}
                plan.append((m, base + info["data_offsets"][0] + rel, nb))
                off += nb
        header["__metadata__"] = {"format": "pt"}
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(os.path.join(out, os.path.basename(f)), "wb") as w:
            w.write(struct.pack("<Q", len(text)) + text)
            for m, start, nb in plan:
                for s in range(start, start + nb, 64 << 20):
                    w.write(m[s:min(start + nb, s + (64 << 20))])
    index = os.path.join(src, "model.safetensors.index.json")
    if os.path.exists(index):  # rebuilt from the new headers
        wm = {}
        for f in sorted(glob.glob(os.path.join(out, "*.safetensors"))):
            for name, _, _, _ in tensors_of(f):
                wm[name] = os.path.basename(f)
        json.dump({"metadata": {}, "weight_map": wm}, open(os.path.join(out, os.path.basename(index)), "w"))
    for name in os.listdir(src):
        if not name.endswith(".safetensors") and not name.endswith(".index.json"):
            shutil.copy(os.path.join(src, name), out)


if __name__ == "__main__":
    main()
