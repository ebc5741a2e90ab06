"""A SentencePiece vocabulary for GGUF twins: a small BPE model trained with the `sentencepiece`
package (byte fallback, digits split, no normalization, as Llama's and Mistral's tokenizers are
set up) on the repository's Markdown, written as llama.cpp's "llama" tokenizer keys the way
convert_hf_to_gguf.py's _create_vocab_sentencepiece does (token text, score and type per id).
"""
from pathlib import Path

import gguf

REPO = Path(__file__).resolve().parents[2]
CONTROL = ["[INST]", "[/INST]"]
# (Not <|im_start|> / <|im_end|>: llama.cpp retypes tokens with such end-of-turn names as
# control tokens, which moex does not; docs/gguf.md.)
USER_DEFINED = ["<|u_start|>", "<|u_end|>"]
# A little CJK so that some of it becomes pieces; emoji stay out of the training text, so they
# are spelled with byte tokens.
EXTRA = ["日本語のテキストです。", "中文文本和日本語", "naïve café Ünïcödé"]


def corpus():
    files = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield line
    for _ in range(50):
        yield from EXTRA


def train(out_dir, vocab_size):
    """Trains OUT_DIR/spm.model (deterministic: one thread, fixed text); returns its path."""
    import sentencepiece as spm
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = out_dir / "spm"
    spm.SentencePieceTrainer.train(
        sentence_iterator=corpus(), model_prefix=str(prefix), model_type="bpe",
        vocab_size=vocab_size, byte_fallback=True, character_coverage=1.0, split_digits=True,
        allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", control_symbols=CONTROL,
        user_defined_symbols=USER_DEFINED, num_threads=1, minloglevel=2)
    return Path(str(prefix) + ".model")


def spm_vocab(model_path):
    """vocab(writer, ckpt_dir, config) for gguf_twin.twin: the model's pieces as GGUF keys."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=str(model_path))

    def add(writer, ckpt_dir, config):
        n = int(config["vocab_size"])
        if sp.vocab_size() > n:
            raise ValueError(f"{model_path}: {sp.vocab_size()} pieces > vocab_size {n}")
        T = gguf.TokenType
        tokens = [f"[PAD{i}]" for i in range(n)]
        scores, types = [-10000.0] * n, [T.UNUSED] * n
        for i in range(sp.vocab_size()):
            tokens[i], scores[i] = sp.id_to_piece(i), sp.get_score(i)
            types[i] = (T.UNKNOWN if sp.is_unknown(i) else T.CONTROL if sp.is_control(i)
                        else T.UNUSED if sp.is_unused(i) else T.BYTE if sp.is_byte(i)
                        else T.USER_DEFINED if tokens[i] in USER_DEFINED else T.NORMAL)
        writer.add_tokenizer_model("llama")
        writer.add_tokenizer_pre("default")
        writer.add_token_list(tokens)
        writer.add_token_scores(scores)
        writer.add_token_types(types)
        writer.add_bos_token_id(sp.bos_id())
        writer.add_eos_token_id(sp.eos_id())
        writer.add_unk_token_id(sp.unk_id())
    return add
