"""The tokenizer of a GGUF twin: tokenizer.json's byte-level BPE (vocab, merges, added tokens)
as llama.cpp's "gpt2" tokenizer, padded with unused placeholder tokens up to config.json's
vocab_size (llama.cpp wants the token list as long as the embedding's rows).
"""
import json
from pathlib import Path

import gguf

QWEN2_REGEX = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}"
               "\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def _split_regexes(pre):
    if not isinstance(pre, dict):
        return []
    if pre.get("type") == "Sequence":
        return [r for p in pre.get("pretokenizers", []) for r in _split_regexes(p)]
    if pre.get("type") == "Split":
        return [pre.get("pattern", {}).get("Regex")]
    return []


def read_vocab(ckpt_dir, vocab_size):
    """(tokens, token types, merges, pre-tokenizer name) from DIR/tokenizer.json."""
    path = Path(ckpt_dir) / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; the twin needs a vocabulary")
    tok = json.loads(path.read_text())
    model = tok.get("model", {})
    if model.get("type") != "BPE":
        raise ValueError(f"{path}: model.type {model.get('type')!r}, the twin maps BPE only")
    tokens = [None] * vocab_size
    types = [gguf.TokenType.UNUSED] * vocab_size
    for text, idx in model.get("vocab", {}).items():
        if idx >= vocab_size:
            raise ValueError(f"{path}: token {text!r} has id {idx} >= vocab_size {vocab_size}")
        tokens[idx], types[idx] = text, gguf.TokenType.NORMAL
    for added in tok.get("added_tokens", []):
        idx = added["id"]
        if idx >= vocab_size:
            raise ValueError(f"{path}: added token id {idx} >= vocab_size {vocab_size}")
        tokens[idx] = added["content"]
        types[idx] = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
    for idx, text in enumerate(tokens):
        if text is None:
            tokens[idx] = f"<|moex_unused_{idx}|>"
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    regexes = _split_regexes(tok.get("pre_tokenizer"))
    pre = "qwen2" if regexes == [QWEN2_REGEX] else "default"
    return tokens, types, merges, pre


def add_vocab(writer, ckpt_dir, config):
    vocab_size = int(config["vocab_size"])
    tokens, types, merges, pre = read_vocab(ckpt_dir, vocab_size)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    eos = config.get("eos_token_id")
    if isinstance(eos, list):
        eos = eos[0] if eos else None
    if eos is not None:
        writer.add_eos_token_id(int(eos))
    if config.get("bos_token_id") is not None:
        writer.add_bos_token_id(int(config["bos_token_id"]))
    writer.add_add_bos_token(False)
    return pre
