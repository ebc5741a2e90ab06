#!/usr/bin/env python3
"""Starting corpora for the fuzz targets, from the tiny presets of `moex make-model`.

Usage: make_corpus.py MOEX_BINARY OUT_DIR. Writes OUT_DIR/<target>/<name> for every target:
config.json files, tokenizer inputs (tokenizer.json NUL text NUL tokenizer_config.json NUL
generation_config.json), safetensors files whose headers keep the real names, dtypes and
metadata but with every dimension clipped to 2 (so an input stays a few KB), shard indexes
naming real tensors, and small GGUF files written by hand. The presets share one byte-level
tokenizer, so small SentencePiece-style, Metaspace and split-behaviour tokenizers are built here
too, to reach the other components.
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

TEXTS = [
    "Hello, world! The quick brown fox jumps over 13 lazy dogs.",
    "<|im_start|>user\nwhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u4f60\u597d \U0001f600  tabs\tand\r\nnewlines",
]
# Shard files that fuzz_checkpoint_index.cc writes next to the index, with their tensors.
HARNESS_SHARDS = {
    "model-00001-of-00002.safetensors": ["model.embed_tokens.weight", "model.norm.weight"],
    "model-00002-of-00002.safetensors": ["lm_head.weight"],
}


def tiny_presets(moex):
    out = subprocess.run([moex, "make-model", "--list-presets"], check=True,
                         capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("tiny-")]


def write(out_dir, target, name, data):
    d = os.path.join(out_dir, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def read_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


def small_safetensors(header, rng):
    """The same header with every dimension clipped to 2 and offsets recomputed."""
    entries = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: kv[1]["data_offsets"][0])
    out, offset = {}, 0
    if "__metadata__" in header:
        out["__metadata__"] = header["__metadata__"]
    for name, v in entries:
        shape = [min(d, 2) for d in v["shape"]]
        n = DTYPE_BYTES[v["dtype"]]
        for d in shape:
            n *= d
        out[name] = {"dtype": v["dtype"], "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(out, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    data = bytes(rng.randrange(256) for _ in range(offset))
    return struct.pack("<Q", len(text)) + text.encode() + data


def shard_index(names):
    files = sorted(HARNESS_SHARDS)
    return json.dumps({"metadata": {"total_size": 72},
                       "weight_map": {n: files[i % 2] for i, n in enumerate(names)}}, indent=2)


def trimmed_byte_level(tok_text, keep=300):
    """The preset tokenizer with its vocabulary cut to ids < keep (and the merges among them)."""
    j = json.loads(tok_text)
    vocab = {t: i for t, i in j["model"]["vocab"].items() if i < keep}
    merges = []
    for m in j["model"].get("merges", []):
        a, b = m.split(" ") if isinstance(m, str) else m
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(m)
    j["model"]["vocab"], j["model"]["merges"] = vocab, merges
    for i, t in enumerate(j.get("added_tokens", [])):
        t["id"] = keep + i
    return json.dumps(j, ensure_ascii=False)


SP = "\u2581"


def sentencepiece_tokenizer():
    """Mixtral-like: Prepend/Replace normalizer, byte fallback, a TemplateProcessing BOS."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in (0x0A, 0x20, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece in [SP, "h", "e", "l", "o", "w", "r", "d", SP + "h", "el", SP + "hel", "lo",
                  SP + "hello", "or", SP + "w", SP + "wor", "ld", SP + "world"]:
        vocab[piece] = len(vocab)
    merges = [f"{SP} h", "e l", f"{SP}h el", "l o", f"{SP}hel lo", "o r", f"{SP} w",
              f"{SP}w or", "l d", f"{SP}wor ld"]
    special = [{"id": i, "content": c, "special": True, "normalized": False, "lstrip": False,
                "rstrip": False, "single_word": False} for c, i in list(vocab.items())[:3]]
    return {
        "version": "1.0", "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SP},
            {"type": "Replace", "pattern": {"String": " "}, "content": SP}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SP}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": True,
                  "byte_fallback": True, "vocab": vocab, "merges": merges}}


def metaspace_tokenizer():
    """Metaspace pre-tokenizer and decoder, added tokens with lstrip/rstrip/single_word."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = {c: i for i, c in enumerate(letters)}
    for extra in [SP, " ", "[", "]", "M", "A", "S", "K", "<", ">", "/", SP + "a", "ab"]:
        vocab[extra] = len(vocab)
    n = len(vocab)
    added = [
        {"id": n, "content": "[MASK]", "lstrip": True, "rstrip": True, "normalized": False,
         "special": False, "single_word": False},
        {"id": n + 1, "content": "xy", "single_word": True, "normalized": True, "special": True,
         "lstrip": False, "rstrip": False},
        {"id": n + 2, "content": "</s>", "normalized": False, "special": True,
         "single_word": False, "lstrip": False, "rstrip": False}]
    meta = {"type": "Metaspace", "replacement": SP, "prepend_scheme": "first", "split": True}
    return {"version": "1.0", "normalizer": {"type": "NFC"}, "post_processor": None,
            "pre_tokenizer": meta, "decoder": dict(meta), "added_tokens": added,
            "model": {"type": "BPE", "merges": [f"{SP} a", "a b"], "vocab": vocab}}


def split_tokenizer(tok_text):
    """The trimmed byte-level tokenizer behind every Split behaviour, Digits and Roberta."""
    j = json.loads(trimmed_byte_level(tok_text))
    stages = [{"type": "Split", "pattern": {"String": s}, "behavior": b, "invert": inv}
              for s, b, inv in [(",", "Removed", False), ("-", "MergedWithPrevious", False),
                                (".", "MergedWithNext", False), ("  ", "Contiguous", True)]]
    stages += [{"type": "Split", "pattern": {"Regex": "\\s+|\\p{P}"}, "behavior": "Isolated"},
               {"type": "Digits", "individual_digits": True},
               {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                "use_regex": True}]
    j["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": stages}
    j["normalizer"] = None
    first, last = j["added_tokens"][0]["content"], j["added_tokens"][-1]["content"]
    j["post_processor"] = {"type": "RobertaProcessing", "sep": [last, j["added_tokens"][-1]["id"]],
                           "cls": [first, j["added_tokens"][0]["id"]], "trim_offsets": True,
                           "add_prefix_space": True}
    return json.dumps(j, ensure_ascii=False)


def handmade_tokenizers(tok_text, out_dir):
    generation = json.dumps({"eos_token_id": [2, 1], "bos_token_id": 1})
    sp_config = json.dumps({"bos_token": "<s>", "eos_token": {"content": "</s>"},
                            "add_bos_token": True, "add_eos_token": True,
                            "added_tokens_decoder": {
                                "40": {"content": "<extra>", "special": True}}})
    inputs = {
        "sentencepiece": (json.dumps(sentencepiece_tokenizer()), sp_config, generation),
        "metaspace": (json.dumps(metaspace_tokenizer()), json.dumps({"eos_token": "</s>"}), None),
        "split-behaviours": (split_tokenizer(tok_text), None, None),
        "byte-level-small": (trimmed_byte_level(tok_text), None, json.dumps({"eos_token_id": 5})),
    }
    for name, (tok, cfg, gen) in inputs.items():
        for i, text in enumerate(TEXTS):
            parts = [tok, text] + ([cfg or "{}", gen] if gen else [cfg] if cfg else [])
            write(out_dir, "fuzz_tokenizer", f"{name}-{i}", "\0".join(parts))


def preset_inputs(moex, preset, extra, tag, out_dir, rng):
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        cmd = [moex, "make-model", "--preset", preset, "--out", model, "-q", "--threads", "1"]
        subprocess.run(cmd + extra, check=True, capture_output=True)
        with open(os.path.join(model, "config.json")) as f:
            write(out_dir, "fuzz_model_config", f"{tag}.json", f.read())
        with open(os.path.join(model, "tokenizer.json")) as f:
            tok = f.read()
        cfg_path = os.path.join(model, "tokenizer_config.json")
        cfg = open(cfg_path).read() if os.path.exists(cfg_path) else ""
        for i, text in enumerate(TEXTS):
            tail = f"\0{cfg}" if (cfg and i == 0) else ""
            write(out_dir, "fuzz_tokenizer", f"{tag}-{i}", f"{tok}\0{text}{tail}")
        shards = sorted(p for p in os.listdir(model) if p.endswith(".safetensors"))
        names = []
        for s in shards:
            header = read_header(os.path.join(model, s))
            names += [k for k in header if k != "__metadata__"]
            write(out_dir, "fuzz_safetensors", f"{tag}-{s}", small_safetensors(header, rng))
        write(out_dir, "fuzz_checkpoint_index", f"{tag}.json", shard_index(sorted(names)))


# Hand-written chat templates covering what real ones use; the corpus scripts/setup.sh
# caches (real templates of many families) is added when present.
CHAT_TEMPLATES = {
    "chatml": "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] "
              "+ '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
              "{{ '<|im_start|>assistant\\n' }}{%- endif %}",
    "namespace-macro": "{% set ns = namespace(sys='', n=0) %}{% macro turn(r, c) -%}[{{ r|upper }}]"
                       " {{ c|trim }}{%- endmacro %}{% for m in messages if m.role != 'tool' %}"
                       "{% if loop.first and m.role == 'system' %}{% set ns.sys = m.content %}"
                       "{% else %}{{ turn(m.role, m.content) }}{% set ns.n = ns.n + 1 %}{% endif %}"
                       "{% else %}empty{% endfor %}{{ ns.sys ~ ns.n }}{{ bos_token }}",
    "tools-json": "{% if tools %}{{ tools|tojson(indent=2) }}{% endif %}{% for m in messages %}"
                  "{% for c in m.tool_calls|default([]) %}{{ c.function.name }}"
                  "({{ c.function.arguments|tojson }}){% endfor %}{{ m.content[:5] ~ m.content[-3:]"
                  " }}{% endfor %}{{ raise_exception('no') if messages|length > 99 }}",
    "filters": "{{ messages|map(attribute='role')|join(',') }}{{ messages|selectattr('role',"
               "'equalto','user')|list|length }}{{ 'a b c'.split()|reverse|join }}"
               "{{ range(3)|sum }}{% set x %}block{% endset %}{{ x|length }}",
}


def chat_template_inputs(out_dir):
    context = json.dumps({"add_generation_prompt": True, "enable_thinking": False,
                          "tools": [{"type": "function", "function": {"name": "f",
                                     "parameters": {"type": "object"}}}]})
    for name, text in CHAT_TEMPLATES.items():
        write(out_dir, "fuzz_chat_template", name, text + "\0" + context)
    corpus = os.path.join(os.path.dirname(__file__), "..", ".cache", "chat-templates")
    for root, _, files in os.walk(corpus):
        for f in sorted(files):
            if f.endswith(".jinja"):
                with open(os.path.join(root, f), encoding="utf-8") as t:
                    write(out_dir, "fuzz_chat_template", f, t.read() + "\0" + context)


# Request bodies of POST /v1/chat/completions and /v1/completions, each with a text for the
# stop-string check (pieces cut at 0x02).
SERVE_REQUESTS = {
    "chat": {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": "Hi <|im_end|> caf\u00e9"}],
             "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
             "seed": 7, "stop": ["\n\n", "END"], "stream": True,
             "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 3},
    "chat-parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                            {"type": "text", "text": "b"}]}],
                   "max_completion_tokens": 4, "user": "u", "n": 1, "logit_bias": {},
                   "frequency_penalty": 0, "tools": [], "tool_choice": "none",
                   "response_format": {"type": "text"}, "chat_template_kwargs": {"x": True}},
    "completion-text": {"prompt": "Once upon a time", "max_tokens": 8, "logprobs": 2,
                        "stop": "\u00e9", "echo": False, "return_tokens_as_token_ids": True},
    "completion-ids": {"prompt": [[1, 2, 3, 999]], "max_tokens": 1, "best_of": 1, "suffix": ""},
}


def serve_request_inputs(out_dir):
    text = b"xa\x02b caf\xc3\x02\xa9 END\x02\n\nrest"  # "é" cut between its two bytes
    for name, body in SERVE_REQUESTS.items():
        write(out_dir, "fuzz_serve_request", name, json.dumps(body).encode() + b"\0" + text)


# Connections' bytes for fuzz_http_framing: a first byte choosing how they arrive (0: at
# once, k: k bytes per read), then requests, valid and not, some pipelined.
HTTP_BODY = b'{"prompt": "hi", "max_tokens": 2}'
HTTP_REQUESTS = {
    "get": b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
    "post-length": b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                   b"\r\nAuthorization: Bearer k\r\nContent-Length: %d\r\n\r\n%s"
                   % (len(HTTP_BODY), HTTP_BODY),
    "post-chunked": b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                    b"Expect: 100-continue\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n"
                    b"0\r\nX-Trailer: t\r\n\r\n",
    "pipelined": b"\r\nGET / HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\nabc"
                 b"GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n",
    "conflicting-length": b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "length-and-chunked": b"POST / HTTP/1.1\r\nContent-Length: 5\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "gzip": b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "folding": b"GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n",
    "bare-lf": b"GET / HTTP/1.1\nHost: x\r\n\r\n",
    "space-colon": b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    "body-too-large": b"POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n",
    "chunk-too-large": b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffff\r\nab",
    "bad-chunk": b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "many-fields": b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(20))
                   + b"\r\n",
}


def http_framing_inputs(out_dir):
    for name, raw in HTTP_REQUESTS.items():
        for step in (0, 1, 7):
            write(out_dir, "fuzz_http_framing", f"{name}-{step}", bytes([step]) + raw)


# GGUF files written here by hand (the fuzz build's Python need not have gguf-py): value type
# ids, ggml type ids and (elements, bytes) per block of the types used.
GGUF_TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34),
              "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210), "BF16": (30, 1, 2),
              "MXFP4": (39, 32, 17), "IQ4_XS": (23, 256, 136)}


def gguf_value(vtype, val):
    """Bytes of one GGUF value of type id vtype (arrays: (element type, list))."""
    if vtype == 8:
        b = val.encode()
        return struct.pack("<Q", len(b)) + b
    if vtype == 9:
        sub, items = val
        return struct.pack("<IQ", sub, len(items)) + b"".join(gguf_value(sub, v) for v in items)
    return struct.pack("<" + {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                              10: "Q", 11: "q", 12: "d"}[vtype], val)


def gguf_file(kvs, tensors, rng, alignment=32):
    """kvs: [(key, type id, value)]; tensors: [(name, type name, ne list)]; the data is random
    bytes, except MXFP4 blocks, whose E8M0 byte is kept in [100, 140) (255, a NaN scale to
    moex, would make the file one that moex refuses)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, val in kvs:
        out += gguf_value(8, key) + struct.pack("<I", vtype) + gguf_value(vtype, val)
    offset, sizes = 0, []
    for name, tname, ne in tensors:
        tid, block, size = GGUF_TYPES[tname]
        n = 1
        for d in ne:
            n *= d
        nbytes = n // block * size
        out += gguf_value(8, name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", tid, offset)
        sizes.append((nbytes, tname))
        offset += -(-nbytes // alignment) * alignment
    out += b"\0" * (-len(out) % alignment)
    for nbytes, tname in sizes:
        data = bytearray(rng.randrange(256) for _ in range(nbytes))
        if tname == "MXFP4":
            data[::17] = bytes(rng.randrange(100, 140) for _ in range(nbytes // 17))
        out += bytes(data) + b"\0" * (-nbytes % alignment)
    return out


def gguf_inputs(out_dir, rng):
    kvs = [("general.architecture", 8, "qwen3moe"), ("general.name", 8, "tiny"),
           ("qwen3moe.block_count", 4, 2), ("qwen3moe.rope.freq_base", 6, 1e6),
           ("qwen3moe.expert_count", 4, 8), ("general.file_type", 4, 15),
           ("tokenizer.ggml.tokens", 9, (8, ["<s>", "a", "\u0120b", "\u00e9"])),
           ("tokenizer.ggml.scores", 9, (6, [0.0, -1.5, -2.0, -3.25])),
           ("tokenizer.ggml.token_type", 9, (5, [3, 1, 1, 1])),
           ("t.flags", 9, (7, [True, False])), ("t.u64", 10, 2 ** 40), ("t.i8", 1, -3),
           ("t.f64", 12, 0.125), ("t.nested", 9, (9, [(4, [1, 2]), (8, ["x"])]))]
    dense = [("token_embd.weight", "Q4_K", [256, 4]), ("output_norm.weight", "F32", [16]),
             ("blk.0.attn_q.weight", "Q8_0", [64, 2]), ("blk.0.ffn_down_exps.weight", "MXFP4", [32, 2, 2]),
             ("blk.0.ffn_up_exps.weight", "Q6_K", [256, 1, 2]), ("blk.0.attn_norm.weight", "BF16", [8]),
             ("blk.0.ffn_gate.weight", "Q4_0", [32, 3]), ("blk.1.attn_k.weight", "F16", [4, 4]),
             ("blk.1.ffn_gate_exps.weight", "IQ4_XS", [256, 1])]
    write(out_dir, "fuzz_gguf", "model.gguf", gguf_file(kvs, dense, rng))
    write(out_dir, "fuzz_gguf", "model-align64.gguf",
          gguf_file(kvs + [("general.alignment", 4, 64)], dense[:4], rng, alignment=64))
    write(out_dir, "fuzz_gguf", "metadata-only.gguf", gguf_file(kvs, [], rng))
    write(out_dir, "fuzz_gguf", "split-part.gguf",
          gguf_file([("split.no", 2, 0), ("split.count", 2, 2), ("split.tensors.count", 5, 2)],
                    dense[1:2], rng))
    write(out_dir, "fuzz_gguf", "empty.gguf", gguf_file([], [], rng))


def gguf_model_inputs(out_dir, rng):
    """Whole tiny models: a 1-layer qwen3moe and a 1-layer Mixtral (llama with experts), hidden
    32, 2 heads of 16, 4 experts top 2, with a byte-level BPE vocabulary of 16 tokens and a chat
    template, so that every loader of fuzz_gguf_model starts from a file it accepts."""
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b", "c", "\u0120", "\u0120a",
              "ab", "abc", "1", "2", ",", "!", "\u010a", "H"]
    vocab = len(tokens)
    tok_kvs = [("tokenizer.ggml.model", 8, "gpt2"), ("tokenizer.ggml.pre", 8, "qwen2"),
               ("tokenizer.ggml.tokens", 9, (8, tokens)),
               ("tokenizer.ggml.token_type", 9, (5, [3, 3, 3] + [1] * (vocab - 3))),
               ("tokenizer.ggml.merges", 9, (8, ["\u0120 a", "a b", "ab c"])),
               ("tokenizer.ggml.eos_token_id", 4, 2), ("tokenizer.ggml.bos_token_id", 4, 0),
               ("tokenizer.chat_template", 8,
                "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")]
    for arch, moe_key, extra in (
            ("qwen3moe", "expert_feed_forward_length", [("qwen3moe.attention.key_length", 4, 16)]),
            ("llama", "feed_forward_length", [])):
        kvs = [("general.architecture", 8, arch), (f"{arch}.block_count", 4, 1),
               (f"{arch}.context_length", 4, 256), (f"{arch}.embedding_length", 4, 32),
               (f"{arch}.attention.head_count", 4, 2), (f"{arch}.attention.head_count_kv", 4, 1),
               (f"{arch}.attention.layer_norm_rms_epsilon", 6, 1e-6),
               (f"{arch}.rope.freq_base", 6, 10000.0), (f"{arch}.expert_count", 4, 4),
               (f"{arch}.expert_used_count", 4, 2), (f"{arch}.{moe_key}", 4, 16)] + extra + tok_kvs
        t = [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
             ("output.weight", "Q8_0", [32, vocab]), ("blk.0.attn_norm.weight", "F32", [32]),
             ("blk.0.ffn_norm.weight", "F32", [32]), ("blk.0.attn_q.weight", "Q8_0", [32, 32]),
             ("blk.0.attn_k.weight", "Q8_0", [32, 16]), ("blk.0.attn_v.weight", "Q8_0", [32, 16]),
             ("blk.0.attn_output.weight", "Q8_0", [32, 32]),
             ("blk.0.ffn_gate_inp.weight", "F32", [32, 4]),
             ("blk.0.ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
             ("blk.0.ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
             ("blk.0.ffn_down_exps.weight", "F16", [16, 32, 4])]
        if arch == "qwen3moe":
            t += [("blk.0.attn_q_norm.weight", "F32", [16]), ("blk.0.attn_k_norm.weight", "F32", [16])]
        write(out_dir, "fuzz_gguf_model", f"{arch}-tiny.gguf", gguf_file(kvs, t, rng))
    write(out_dir, "fuzz_gguf_model", "deepseek2-tiny.gguf",
          gguf_file(deepseek2_keys() + tok_kvs, deepseek2_tensors(vocab), rng))
    write(out_dir, "fuzz_gguf_model", "gpt-oss-tiny.gguf",
          gguf_file(gpt_oss_keys() + tok_kvs, gpt_oss_tensors(vocab), rng))


def deepseek2_keys():
    """A 1-layer DeepSeek-V2-Lite in llama.cpp's MLA layout: hidden 32, 2 heads, latent 32,
    nope 16 + rope 16, v 16, 4 experts top 2 and a shared one, YaRN."""
    a = "deepseek2"
    return [("general.architecture", 8, a), (f"{a}.block_count", 4, 1),
            (f"{a}.context_length", 4, 256), (f"{a}.embedding_length", 4, 32),
            (f"{a}.attention.head_count", 4, 2), (f"{a}.attention.head_count_kv", 4, 1),
            (f"{a}.attention.layer_norm_rms_epsilon", 6, 1e-6), (f"{a}.rope.freq_base", 6, 1e4),
            (f"{a}.expert_count", 4, 4), (f"{a}.expert_used_count", 4, 2),
            (f"{a}.expert_feed_forward_length", 4, 16), (f"{a}.expert_shared_count", 4, 1),
            (f"{a}.leading_dense_block_count", 4, 0), (f"{a}.attention.kv_lora_rank", 4, 32),
            (f"{a}.attention.key_length", 4, 48), (f"{a}.attention.value_length", 4, 32),
            (f"{a}.attention.key_length_mla", 4, 32), (f"{a}.attention.value_length_mla", 4, 16),
            (f"{a}.rope.dimension_count", 4, 16), (f"{a}.expert_gating_func", 4, 1),
            (f"{a}.rope.scaling.type", 8, "yarn"), (f"{a}.rope.scaling.factor", 6, 4.0),
            (f"{a}.rope.scaling.original_context_length", 4, 64),
            (f"{a}.rope.scaling.yarn_log_multiplier", 6, 0.0707)]


def deepseek2_tensors(vocab):
    b = "blk.0."
    return [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
            ("output.weight", "Q8_0", [32, vocab]), (b + "attn_norm.weight", "F32", [32]),
            (b + "ffn_norm.weight", "F32", [32]), (b + "attn_q.weight", "Q8_0", [32, 64]),
            (b + "attn_kv_a_mqa.weight", "Q8_0", [32, 48]),
            (b + "attn_kv_a_norm.weight", "F32", [32]), (b + "attn_k_b.weight", "F16", [16, 32, 2]),
            (b + "attn_v_b.weight", "Q8_0", [32, 16, 2]),
            (b + "attn_output.weight", "Q8_0", [32, 32]), (b + "ffn_gate_inp.weight", "F32", [32, 4]),
            (b + "ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_down_exps.weight", "F16", [16, 32, 4]),
            (b + "ffn_gate_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_up_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_down_shexp.weight", "F16", [16, 32])]


def gpt_oss_keys():
    """A 2-layer gpt-oss (sliding then full): hidden 32, 2 heads of 16 (1 KV head), 4 experts of
    32 top 2 in MXFP4, sinks, biases, YaRN."""
    a = "gpt-oss"
    return [("general.architecture", 8, a), (f"{a}.block_count", 4, 2),
            (f"{a}.context_length", 4, 256), (f"{a}.embedding_length", 4, 32),
            (f"{a}.attention.head_count", 4, 2), (f"{a}.attention.head_count_kv", 4, 1),
            (f"{a}.attention.key_length", 4, 16), (f"{a}.attention.value_length", 4, 16),
            (f"{a}.attention.layer_norm_rms_epsilon", 6, 1e-5), (f"{a}.rope.freq_base", 6, 1.5e5),
            (f"{a}.expert_count", 4, 4), (f"{a}.expert_used_count", 4, 2),
            (f"{a}.expert_feed_forward_length", 4, 32), (f"{a}.attention.sliding_window", 4, 8),
            (f"{a}.rope.scaling.type", 8, "yarn"), (f"{a}.rope.scaling.factor", 6, 32.0),
            (f"{a}.rope.scaling.original_context_length", 4, 64)]


def gpt_oss_tensors(vocab):
    t = [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
         ("output.weight", "Q8_0", [32, vocab])]
    for i in range(2):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", "F32", [32]), (b + "post_attention_norm.weight", "F32", [32]),
              (b + "attn_q.weight", "Q8_0", [32, 32]), (b + "attn_q.bias", "F32", [32]),
              (b + "attn_k.weight", "Q8_0", [32, 16]), (b + "attn_k.bias", "F32", [16]),
              (b + "attn_v.weight", "Q8_0", [32, 16]), (b + "attn_v.bias", "F32", [16]),
              (b + "attn_output.weight", "Q8_0", [32, 32]), (b + "attn_output.bias", "F32", [32]),
              (b + "attn_sinks.weight", "F32", [2]), (b + "ffn_gate_inp.weight", "F32", [32, 4]),
              (b + "ffn_gate_inp.bias", "F32", [4])]
        for proj in ("gate", "up", "down"):
            t += [(b + f"ffn_{proj}_exps.weight", "MXFP4", [32, 32, 4]),
                  (b + f"ffn_{proj}_exps.bias", "F32", [32, 4])]
    return t


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    moex, out_dir = sys.argv[1], sys.argv[2]
    rng = random.Random(0)
    chat_template_inputs(out_dir)
    serve_request_inputs(out_dir)
    http_framing_inputs(out_dir)
    gguf_inputs(out_dir, rng)
    gguf_model_inputs(out_dir, rng)
    for preset in tiny_presets(moex):
        preset_inputs(moex, preset, [], preset, out_dir, rng)
    first = sorted(os.listdir(os.path.join(out_dir, "fuzz_tokenizer")))[0]
    with open(os.path.join(out_dir, "fuzz_tokenizer", first), "rb") as f:
        handmade_tokenizers(f.read().split(b"\0")[0].decode(), out_dir)
    # Other quantizations and float dtypes change the config's and the header's contents.
    preset_inputs(moex, "tiny-qwen3-moe", ["--bits", "0", "--dtype", "f32"], "tiny-qwen3-moe-f32",
                  out_dir, rng)
    preset_inputs(moex, "tiny-mixtral", ["--bits", "8", "--group-size", "32", "--dtype", "f16",
                                        "--router-bits", "0"], "tiny-mixtral-q8", out_dir, rng)
    # The index the harness's shards satisfy exactly.
    valid = {"metadata": {"total_size": 72},
             "weight_map": {n: f for f, ns in HARNESS_SHARDS.items() for n in ns}}
    write(out_dir, "fuzz_checkpoint_index", "harness-valid.json", json.dumps(valid, indent=2))
    for target in sorted(os.listdir(out_dir)):
        files = os.listdir(os.path.join(out_dir, target))
        size = sum(os.path.getsize(os.path.join(out_dir, target, f)) for f in files)
        print(f"corpus: {target}: {len(files)} files, {size} bytes")


if __name__ == "__main__":
    main()
