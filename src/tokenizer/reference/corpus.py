"""Parity corpus for the tokenizer reference tests: English, CJK, Arabic, emoji and ZWJ
sequences, digit runs, whitespace runs and tabs, code, mixed scripts, special tokens in
text, combining marks (NFC), unusual white space, and invalid UTF-8 (as raw bytes)."""
import random

TEXTS = [
    "Hello world! How are you today?",
    "The quick brown fox jumps over the lazy dog. It's 5 o'clock; don't you think we'll be late?",
    "I'LL SEE YOU'RE FINE, THEY'VE GONE, HE'D STAY, SHE'S HERE.",
    "中文测试：你好，世界！今天天气很好。我们去公园散步吧。",
    "日本語のテキスト：こんにちは、世界。カタカナとひらがなと漢字。",
    "한국어 텍스트: 안녕하세요, 세계! 반갑습니다.",
    "\u1100\u1161\u11a8 decomposed hangul and e\u0301 cafe\u0301 A\u030a \u212b \u2126 q\u0307\u0323",
    "العربية: مرحبا بالعالم! كيف حالك؟ ١٢٣٤٥",
    "Emoji: 😀😃😄 👍🏽 🇫🇷 🇯🇵 ❤️ ✨",
    "ZWJ: 👨‍👩‍👧‍👦 🏳️‍🌈 👩🏽‍💻 🧑‍🤝‍🧑 family👨‍👩‍👧end",
    "Digits: 1234567890 3.14159265358979 2024-01-01 1,000,000 0x1F 1e-9 007",
    "Whitespace:    four spaces,\ttab,\t\ttwo tabs,  \n\n\nnewlines\r\nCRLF   trailing   ",
    "    leading spaces",
    "\t\tindent\n\tmore\n",
    "\n",
    " ",
    "   ",
    "a" * 300,
    " " * 200 + "x",
    "def f(x):\n    return x ** 2  # square\n\nfor i in range(10):\n    print(f(i))\n",
    "int main() {\n  std::vector<int> v{1, 2, 3};\n  for (auto& x : v) x *= 2;\n  return 0;\n}\n",
    "<html><body class=\"x\">&amp; &lt;tag&gt;</body></html> {\"key\": [1, 2.5, null]}",
    "Mixed: English中文العربيةРусскийΕλληνικάहिन्दी ภาษาไทย",
    "Кириллица и латиница: Hello мир",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|><|endoftext|>",
    "text<|endoftext|>more text <|im_start|> spaced <|im_end|>",
    "<s>bos in text</s> and <unk> and <|begin_of_text|>hi<|eot_id|>",
    "partial <|im_sta and <|endoftext| and < | > <<>>",
    "Special-ish: [MASK] <pad> <|fim_prefix|>",
    "white space kinds:\u0085NEL\u00a0NBSP\u3000ideographic\u2028LS\u2029PS\u200bZWSP\u202fNNBSP\u1680ogham\u000bVT\u000cFF",
    "byte fallback rare chars: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ☃ ⚙ 🜁 ꙮ",
    "Accents: naïve café résumé Ångström Øresund İstanbul straße",
    "Punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( ))) ''' \"\"\"",
    "email@example.com https://example.org/path?q=1&r=2#frag",
    "",
    "x",
    "▁existing▁metaspace▁chars and Ġ byte-level chars Ċ",
    # o200k's split (gpt-oss): case runs, contractions glued to either case run, punctuation
    # runs that swallow following newlines and slashes, title-case and modifier letters.
    "camelCaseWords HTTPServer McDonald's iPhone XMLHttpRequest ǅungla ʰmod DON'T I'M",
    "path/a.b/c//d ../up\\win ;/\n end:/\r\n next",
]

# Invalid UTF-8 inputs (bytes); the reference sees them as bytes.decode("utf-8", "replace").
INVALID = [
    b"\xff\xfeA",
    b"abc\xe4\xbd",
    b"\xc0\x80 overlong",
    b"\xed\xa0\x80 surrogate",
    b"\xf4\x90\x80\x80 too big",
    b"ok \xe4\xbd\xa0 then \x80 stray",
    b"\xf0\x9f\x98 truncated emoji",
]


def corpus_bytes():
    return [t.encode("utf-8") for t in TEXTS] + INVALID


def training_text(n_lines=3000, seed=0):
    """Deterministic training lines built from the corpus pieces and random word salad."""
    rng = random.Random(seed)
    words = " ".join(TEXTS).split()
    lines = list(TEXTS)
    for _ in range(n_lines):
        k = rng.randint(3, 20)
        lines.append(" ".join(rng.choice(words) for _ in range(k)))
    return lines
