// Drafting with a multi-token-prediction module (mtp_draft.h, model/engine/mtp_module.h) on
// tiny glm4_moe and deepseek_v3 models given a random module: the output is plain decoding's,
// and the module's row at every position, as the speculator runs it between passes that keep
// some drafts and drop others, equals bit for bit the row of one run of the module over the
// whole text. The module's arithmetic itself is checked against an MLX oracle
// (reference/mtp_parity_test.py).
#include "generate/mtp_draft.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/testing/temp_dir.h"
#include "model/engine/engine_test_util.h"
#include "model/engine/mtp_test_util.h"

namespace moex::generate {
namespace {

namespace eng = model::engine;

std::unique_ptr<eng::Engine> open_with_mtp(const std::string& dir, int64_t chunk = 0) {
  eng::EngineOptions o = eng::test::options_for_fused("auto");
  o.mtp = true;
  o.prefill_chunk = chunk;
  return eng::Engine::open(dir, o);
}

GenerationParams mtp_greedy(int64_t n) {
  GenerationParams p;
  p.max_tokens = n;
  p.ignore_eos = true;
  return p;
}

std::vector<TokenId> mtp_plain_tokens(eng::Engine& e, const std::vector<TokenId>& prompt,
                                      int64_t n) {
  e.reset();
  Generator g(mtp_greedy(n), {}, e.vocab(), prompt);
  std::vector<TokenId> out;
  SequenceDriver d;
  d.decode = [&](TokenId x) { return e.decode(x); };
  d.context_full = [&] { return e.position() >= e.context(); };
  d.on_step = [&](const Step& s, const float*) {
    out.push_back(s.token);
    return true;
  };
  run_sequence(g, e.prefill(prompt), d);
  return out;
}

// The module's drafts replaced by the known continuation, every `wrong`-th one off by one:
// passes then keep some drafts and drop others while the module runs as it always does.
struct ScriptedMtp final : Drafter {
  MtpSpeculator* mtp = nullptr;
  std::vector<TokenId> want;
  size_t prompt = 0;
  int64_t wrong = 3, vocab = 1, proposed = 0;
  std::vector<TokenId> propose(std::span<const TokenId> h, int64_t k) override {
    const std::vector<TokenId> own = mtp->propose(h, k);
    std::vector<TokenId> out;
    for (size_t i = h.size() - prompt; i < want.size() && out.size() < own.size(); ++i) {
      const bool bad = ++proposed % wrong == 0;
      out.push_back(bad ? TokenId((want[i] + 1) % vocab) : want[i]);
    }
    return out;
  }
};

class MtpFamilies : public ::testing::TestWithParam<const char*> {};

TEST_P(MtpFamilies, RowsMatchOneRunOverTheTextAndTheOutputIsPlainDecodings) {
  auto e = open_with_mtp(eng::test::mtp_checkpoint(GetParam()));
  ASSERT_TRUE(e->has_mtp());
  const int64_t V = e->vocab(), n = 30;
  std::vector<TokenId> prompt;
  for (int i = 0; i < 19; ++i) prompt.push_back(TokenId((i * 13 + 5) % V));
  const std::vector<TokenId> want = mtp_plain_tokens(*e, prompt, n);
  std::vector<TokenId> text = prompt;
  text.insert(text.end(), want.begin(), want.end());
  const std::vector<std::vector<float>> rows = eng::test::module_rows(*e, text);

  for (int64_t k : {1, 3}) {
    for (bool scripted : {false, true}) {
      e->reset();
      MtpSpeculator mtp(*e, e->sequence());
      int64_t checked = 0, unequal = 0;
      mtp.on_draft_logits = [&](int64_t p, const float* l) {
        ASSERT_LT(size_t(p), rows.size());
        ++checked;
        unequal += !eng::test::bit_equal(std::vector<float>(l, l + V), rows[size_t(p)]);
      };
      ScriptedMtp script;
      script.mtp = &mtp;
      script.want = want;
      script.prompt = prompt.size();
      script.vocab = V;
      Drafter& drafter = scripted ? static_cast<Drafter&>(script) : mtp;
      Generator g(mtp_greedy(n), {}, V, prompt);
      std::vector<TokenId> got;
      SpecDriver d = mtp.driver();
      d.on_step = [&](const Step& s, const float*) {
        got.push_back(s.token);
        return true;
      };
      const SpecStats st =
          run_speculative(g, mtp.prefill(prompt.data(), int64_t(prompt.size())), prompt, drafter,
                          k, V, d)
              .stats;
      const std::string what = std::string(GetParam()) + " k " + std::to_string(k) +
                               (scripted ? " scripted" : " module");
      EXPECT_EQ(got, want) << what;
      EXPECT_EQ(e->position(), int64_t(text.size()) - 1) << what;
      EXPECT_GT(checked, 5) << what;
      EXPECT_EQ(unequal, 0) << what << ": of " << checked << " module rows";
      if (scripted) {
        EXPECT_GT(st.accepted, 0) << what;
        EXPECT_LT(st.accepted, st.drafted) << what;
      }
    }
  }
}

// Rows run together, in any chunking, equal the rows run one at a time, and the outputs before
// the module's norm (the next draft's input) too.
TEST_P(MtpFamilies, RowsAtOnceEqualRowsOneAtATime) {
  for (int64_t chunk : {int64_t{0}, int64_t{4}}) {
    auto e = open_with_mtp(eng::test::mtp_checkpoint(GetParam()), chunk);
    const int64_t V = e->vocab(), H = e->config().hidden, n = 11;
    std::vector<TokenId> text;
    for (int i = 0; i < n + 1; ++i) text.push_back(TokenId((i * 29 + 3) % V));
    std::vector<float> hidden;
    e->capture_hidden(&hidden);
    e->prefill(std::vector<TokenId>(text.begin(), text.end() - 1));
    e->capture_hidden(nullptr);
    ASSERT_EQ(int64_t(hidden.size()), n * H);
    auto all = e->new_mtp_sequence();
    std::vector<float> out_all(size_t(n * H)), out_one(size_t(n * H));
    const float* l = e->mtp_forward(*all, &text[1], hidden.data(), n, out_all.data());
    const std::vector<float> last_all(l, l + V);
    auto one = e->new_mtp_sequence();
    for (int64_t p = 0; p < n; ++p)
      l = e->mtp_forward(*one, &text[size_t(p) + 1], hidden.data() + p * H, 1,
                         out_one.data() + p * H);
    EXPECT_TRUE(eng::test::bit_equal(last_all, std::vector<float>(l, l + V))) << chunk;
    EXPECT_TRUE(eng::test::bit_equal(out_all, out_one)) << chunk;
    EXPECT_EQ(all->position(), n);
    // A main sequence is not the module's, nor the other way round.
    EXPECT_THROW(e->mtp_forward(e->sequence(), &text[1], hidden.data(), 1), Error);
    EXPECT_THROW(e->forward(*all, &text[1], 1), Error);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MtpFamilies,
                         ::testing::Values("tiny-glm4-moe", "tiny-deepseek-v3", "tiny-qwen3-next",
                                           "tiny-qwen3-5-moe"));

void expect_mtp_open_error(const std::string& dir, const std::string& part) {
  try {
    open_with_mtp(dir);
    ADD_FAILURE() << dir << ": opened with --spec mtp";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(MtpOpen, SaysWhatIsMissing) {
  moex::testing::TempDir tmp("moex_mtp_open");
  // No module announced, a module announced without its tensors, a family without one.
  const std::string none = eng::test::write_tiny_preset("tiny-glm4-moe", tmp.file("none"));
  expect_mtp_open_error(none, "num_nextn_predict_layers");
  nlohmann::json j = eng::test::read_config(none);
  j["num_nextn_predict_layers"] = 1;
  eng::test::write_config(none, j);
  expect_mtp_open_error(none, ".enorm.weight");
  expect_mtp_open_error(eng::test::write_tiny_preset("tiny-qwen3-moe", tmp.file("qwen")),
                        "glm4_moe");
  // Qwen3-Next and Qwen3.5 keep the module under mtp.*: none there, or one the config disowns.
  expect_mtp_open_error(eng::test::write_tiny_preset("tiny-qwen3-next", tmp.file("next")),
                        "mtp.fc.weight");
  const std::string q35 = eng::test::write_mtp_checkpoint("tiny-qwen3-5-moe", tmp.file("q35"));
  j = eng::test::read_config(q35);
  j["text_config"]["mtp_num_hidden_layers"] = 0;
  eng::test::write_config(q35, j);
  expect_mtp_open_error(q35, "mtp_num_hidden_layers is 0");
  j["text_config"]["mtp_num_hidden_layers"] = 1;
  j["text_config"]["mtp_use_dedicated_embeddings"] = true;
  eng::test::write_config(q35, j);
  expect_mtp_open_error(q35, "mtp_use_dedicated_embeddings");
  // Without the option the module's tensors are dropped, as mlx-lm drops them.
  auto e = eng::Engine::open(eng::test::mtp_checkpoint("tiny-glm4-moe"),
                             eng::test::options_for_fused("auto"));
  EXPECT_FALSE(e->has_mtp());
  EXPECT_THROW(e->new_mtp_sequence(), Error);
}

}  // namespace
}  // namespace moex::generate
