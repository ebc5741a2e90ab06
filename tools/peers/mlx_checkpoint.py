"""Reads a moex / MLX checkpoint directory (config.json + *.safetensors) with numpy only, and
dequantizes its MLX affine weights: w = scale * q + bias per group of `group_size` inputs, the
q values packed LSB first into uint32 words. Used by gguf_twin.py and its test.
"""
import json
import struct
from pathlib import Path

import numpy as np

_DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32, "U32": np.uint32,
           "I32": np.int32, "U8": np.uint8, "I8": np.int8}


def bf16_to_f32(raw):
    """bf16 bit patterns (uint16) -> float32, exactly."""
    return (raw.astype(np.uint32) << 16).view(np.float32)


class Checkpoint:
    """The tensors of every safetensors shard, memory-mapped, plus config.json."""

    def __init__(self, directory):
        self.dir = Path(directory)
        config_path = self.dir / "config.json"
        if not config_path.is_file():
            raise FileNotFoundError(f"{config_path}: no config.json (not a checkpoint directory)")
        self.config = json.loads(config_path.read_text())
        self._entries = {}  # name -> (file, dtype string, shape, begin, end)
        shards = sorted(self.dir.glob("*.safetensors"))
        if not shards:
            raise FileNotFoundError(f"{self.dir}: no *.safetensors files")
        for shard in shards:
            with open(shard, "rb") as f:
                (header_len,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(header_len))
            base = 8 + header_len
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                if info["dtype"] not in _DTYPES:
                    raise ValueError(f"{shard}: tensor {name} has dtype {info['dtype']}, "
                                     f"expected one of {sorted(_DTYPES)}")
                if name in self._entries:
                    raise ValueError(f"{shard}: tensor {name} is also in {self._entries[name][0]}")
                begin, end = info["data_offsets"]
                self._entries[name] = (shard, info["dtype"], tuple(info["shape"]),
                                       base + begin, base + end)
        self._maps = {}

    def names(self):
        return sorted(self._entries)

    def has(self, name):
        return name in self._entries

    def raw(self, name):
        """The stored array (bf16 as uint16), memory-mapped, read-only."""
        if name not in self._entries:
            raise KeyError(f"{self.dir}: no tensor {name}")
        shard, dtype, shape, begin, end = self._entries[name]
        if shard not in self._maps:
            self._maps[shard] = np.memmap(shard, dtype=np.uint8, mode="r")
        count = int(np.prod(shape)) if shape else 1
        return self._maps[shard][begin:end].view(_DTYPES[dtype])[:count].reshape(shape)

    def dtype(self, name):
        return self._entries[name][1]

    def float(self, name):
        """A float tensor (bf16/f16/f32) as float32."""
        arr = self.raw(name)
        if self.dtype(name) == "BF16":
            return bf16_to_f32(arr)
        return arr.astype(np.float32)

    def is_quantized(self, prefix):
        return self.has(prefix + ".scales") and self.dtype(prefix + ".weight") == "U32"

    def quant_params(self, prefix):
        """(bits, group_size) of a quantized weight, from config.json's per-tensor overrides
        (mlx-lm's layout) or the top-level quantization block."""
        q = self.config.get("quantization") or self.config.get("quantization_config")
        if not q:
            raise ValueError(f"{self.dir}/config.json: {prefix} is quantized but the config "
                             "has no quantization block")
        own = q.get(prefix)
        if isinstance(own, dict):
            return int(own["bits"]), int(own["group_size"])
        return int(q["bits"]), int(q["group_size"])

    def dequantize(self, prefix, index=None):
        """The float32 weights of `prefix` (.weight/.scales/.biases); `index` picks one expert
        of a stacked [E, out, in] tensor so big layers dequantize one expert at a time."""
        if not self.is_quantized(prefix):
            w = self.float(prefix + ".weight")
            return w if index is None else w[index]
        bits, group = self.quant_params(prefix)
        packed = self.raw(prefix + ".weight")
        scales = self.raw(prefix + ".scales")
        biases = self.raw(prefix + ".biases")
        if index is not None:
            packed, scales, biases = packed[index], scales[index], biases[index]
        return dequantize_affine(np.asarray(packed), bf16_or_float(self, prefix, scales),
                                 bf16_or_float(self, prefix, biases), bits, group, prefix)


def bf16_or_float(ckpt, prefix, arr):
    if ckpt.dtype(prefix + ".scales") == "BF16":
        return bf16_to_f32(np.asarray(arr))
    return np.asarray(arr, dtype=np.float32)


def unpack(packed, bits):
    """uint32 words [..., W] -> uint8 values [..., W * 32 / bits], LSB first."""
    if 32 % bits != 0:
        raise ValueError(f"{bits}-bit weights straddle uint32 words; only 2, 4 and 8 bits are "
                         "supported by this reader")
    per_word = 32 // bits
    shifts = np.arange(per_word, dtype=np.uint32) * bits
    values = (packed[..., None] >> shifts) & np.uint32((1 << bits) - 1)
    return values.reshape(*packed.shape[:-1], packed.shape[-1] * per_word).astype(np.uint8)


def dequantize_affine(packed, scales, biases, bits, group, name="tensor"):
    q = unpack(packed, bits).astype(np.float32)
    n_in = q.shape[-1]
    if n_in % group != 0 or scales.shape[-1] != n_in // group:
        raise ValueError(f"{name}: {n_in} inputs, {scales.shape[-1]} scales per row, group {group}")
    grouped = q.reshape(*q.shape[:-1], n_in // group, group)
    w = grouped * scales[..., None] + biases[..., None]
    return w.reshape(q.shape)
