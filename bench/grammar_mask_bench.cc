// The structured-output mask's cost per token, in-process and single-threaded: the grammar
// processor of a JSON schema (the one tools/bench_structured.py sends) stepped greedily over
// random logits of the model's vocabulary size, restarted whenever the grammar completes.
// Prints the vocabulary setup and compile times and microseconds per token of apply+accept.
//   grammar_mask_bench MODEL_DIR [TOKENS [GRAMMAR]]   (GRAMMAR: a regex, an EBNF grammar or a JSON
//   schema: also time compiling it, for sizing the bounds of src/serve/structured_output.h)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "core/error.h"
#include "generate/grammar.h"
#include "model/family_registry.h"
#include "serve/structured_output.h"
#include "tokenizer/tokenizer.h"

using namespace moex;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kSchema = R"({"type": "array", "minItems": 40, "maxItems": 40,
  "items": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0,
  "maximum": 999}, "name": {"type": "string", "maxLength": 6}, "ok": {"type": "boolean"}},
  "required": ["id", "name", "ok"]}})";

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct MaskCost {
  double apply_us = 0, accept_us = 0, p99_us = 0;  // mean apply(), mean accept(), p99 of both
  int documents = 0;
};

// The processor's own calls, timed apart from the rest of a step: logits copied in and the
// argmax (the sampler's part) are not counted. A fresh processor per completed document.
MaskCost mask_cost(const generate::Grammar& g, int64_t vocab, const std::vector<int32_t>& stop,
                   int tokens) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 2.f);
  std::vector<std::vector<float>> pool(16, std::vector<float>(size_t(vocab)));
  for (auto& l : pool)
    for (float& x : l) x = normal(rng);
  std::vector<float> work(static_cast<size_t>(vocab));
  std::vector<double> step_us;
  MaskCost c;
  auto p = g.processor();
  generate::TokenHistory history;
  for (int i = 0; i < tokens; ++i) {
    work = pool[size_t(i) % pool.size()];
    auto t0 = Clock::now();
    p->apply(work, history);
    const double a = seconds_since(t0) * 1e6;
    const auto tok = int32_t(std::max_element(work.begin(), work.end()) - work.begin());
    double b = 0;
    if (std::find(stop.begin(), stop.end(), tok) != stop.end()) {
      p = g.processor();
      ++c.documents;
    } else {
      t0 = Clock::now();
      p->accept(tok);
      b = seconds_since(t0) * 1e6;
    }
    c.apply_us += a / tokens;
    c.accept_us += b / tokens;
    step_us.push_back(a + b);
  }
  std::sort(step_us.begin(), step_us.end());
  c.p99_us = step_us[step_us.size() * 99 / 100];
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: grammar_mask_bench MODEL_DIR [TOKENS]\n");
    return 2;
  }
  try {
    const int tokens = argc > 2 ? std::stoi(argv[2]) : 2000;
    const model::ModelConfig cfg = model::load_model_config(argv[1]);
    const Tokenizer tok = Tokenizer::load(argv[1]);
    const std::vector<int32_t> stop = tok.eos_ids();
    auto t0 = Clock::now();
    generate::GrammarEngine engine(serve::grammar_vocabulary(tok, cfg.vocab), stop);
    const double setup = seconds_since(t0);
    t0 = Clock::now();
    const auto g = engine.compile({generate::GrammarKind::kJsonSchema, kSchema, {}, {}});
    const double compile = seconds_since(t0);
    if (argc > 3) {
      t0 = Clock::now();
      const std::string text = argv[3];
      const auto kind = text[0] == '{'                            ? generate::GrammarKind::kJsonSchema
                        : text.find("::=") != std::string::npos ? generate::GrammarKind::kEbnf
                                                                : generate::GrammarKind::kRegex;
      engine.compile({kind, text, {}, {}});
      std::printf("{\"grammar_bytes\": %zu, \"kind\": %d, \"compile_s\": %.3f}\n", text.size(),
                  int(kind), seconds_since(t0));
    }
    const MaskCost m = mask_cost(*g, cfg.vocab, stop, tokens);
    std::printf("{\"vocab\": %lld, \"engine\": \"%s\", \"vocab_setup_s\": %.3f, "
                "\"schema_compile_s\": %.3f, \"tokens\": %d, \"documents\": %d, "
                "\"apply_us_per_token\": %.1f, \"accept_us_per_token\": %.1f, "
                "\"mask_us_per_token\": %.1f, \"p99_us\": %.1f}\n",
                (long long)cfg.vocab, generate::GrammarEngine::engine_name(), setup, compile,
                tokens, m.documents, m.apply_us, m.accept_us, m.apply_us + m.accept_us, m.p99_us);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grammar_mask_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
