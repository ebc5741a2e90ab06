// Runs a greedy Generator over given logits for generator_reference_test.py: reads a JSON
// spec (vocab, prompt, stop ids, min_tokens, ignore_eos, logit bias, penalties, max_tokens)
// and float32 logits rows (one per step), and writes one JSON line per step: the token, how
// the step ended, and the processed logits as float32 bits (so the test compares exactly).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "generate/generator.h"

namespace {

using moex::generate::GenerationParams;
using moex::generate::Generator;
using moex::generate::StepEnd;
using moex::generate::TokenId;

std::string read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) moex::fail("cannot read ", path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

int run(const char* spec_path, const char* logits_path) {
  const nlohmann::json spec = nlohmann::json::parse(read_file(spec_path));
  const int64_t vocab = spec.at("vocab").get<int64_t>();
  const std::string raw = read_file(logits_path);
  if (vocab < 1 || raw.size() % (size_t(vocab) * 4) != 0) moex::fail("bad logits file size");
  const size_t rows = raw.size() / (size_t(vocab) * 4);
  std::vector<float> logits(rows * size_t(vocab));
  std::memcpy(logits.data(), raw.data(), raw.size());

  GenerationParams p;
  p.max_tokens = spec.at("max_tokens").get<int64_t>();
  p.min_tokens = spec.at("min_tokens").get<int64_t>();
  p.ignore_eos = spec.at("ignore_eos").get<bool>();
  for (const auto& b : spec.at("logit_bias"))
    p.logits.logit_bias.emplace_back(b.at(0).get<TokenId>(), b.at(1).get<float>());
  p.logits.penalties.repetition = spec.at("repetition").get<double>();
  p.logits.penalties.frequency = spec.at("frequency").get<double>();
  p.logits.penalties.presence = spec.at("presence").get<double>();
  const auto prompt = spec.at("prompt").get<std::vector<TokenId>>();
  Generator g(p, spec.at("stop_ids").get<std::vector<TokenId>>(), vocab, prompt);

  for (size_t r = 0; r < rows; ++r) {
    const auto s = g.next(logits.data() + r * size_t(vocab));
    std::vector<uint32_t> bits(static_cast<size_t>(vocab));
    std::memcpy(bits.data(), s.logits.data(), bits.size() * 4);
    const char* end = s.end == StepEnd::kStop ? "stop" : s.end == StepEnd::kLength ? "length" : "none";
    std::cout << nlohmann::json{{"token", s.token}, {"end", end}, {"bits", bits}}.dump() << "\n";
    if (s.end != StepEnd::kNone) break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SPEC.json LOGITS.f32\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
