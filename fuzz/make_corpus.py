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

import make_corpus_gguf

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


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    moex, out_dir = sys.argv[1], sys.argv[2]
    rng = random.Random(0)
    chat_template_inputs(out_dir)
    serve_request_inputs(out_dir)
    http_framing_inputs(out_dir)
    make_corpus_gguf.gguf_inputs(out_dir, rng, write)
    make_corpus_gguf.gguf_model_inputs(out_dir, rng, write)
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
