// GrammarEngine on xgrammar's C++ core (built when MOEX_HAVE_XGRAMMAR): the vocabulary as
// raw token bytes, JSON schemas compiled without free whitespace (so a model cannot pad the
// output forever), and a per-request GrammarMatcher whose bitmask, narrowed to the tokens that
// keep the output well-formed UTF-8 (utf8_mask.h), becomes -inf logits.
#include "generate/grammar.h"

#include <dlpack/dlpack.h>
#include <xgrammar/xgrammar.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <limits>
#include <thread>

#include "core/error.h"
#include "generate/ebnf_text.h"
#include "generate/utf8_mask.h"

namespace moex::generate {
namespace {

// JSON Schema for any object (OpenAI's json_object); not strict, so any properties.
constexpr const char* kAnyObjectSchema = R"({"type": "object"})";

class XgProcessor final : public LogitsProcessor {
 public:
  // `barred`: stop ids this grammar never ends with (GrammarSpec::end_ids).
  XgProcessor(const xgrammar::CompiledGrammar& g, int64_t vocab, std::vector<TokenId> barred,
              std::shared_ptr<const Utf8TokenMasks> utf8)
      : matcher_(g),
        vocab_(vocab),
        mask_(size_t(xgrammar::GetBitmaskSize(int(vocab)))),
        barred_(std::move(barred)),
        utf8_(std::move(utf8)) {}

  void apply(std::span<float> logits, const TokenHistory&) override {
    int64_t shape[1] = {int64_t(mask_.size())};
    DLTensor t{};
    t.data = mask_.data();
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 1;
    t.dtype = xgrammar::GetBitmaskDLType();
    t.shape = shape;
    matcher_.FillNextTokenBitmask(&t);
    const std::vector<uint32_t>& utf8 = utf8_->allowed(utf8_state_);
    for (size_t w = 0; w < mask_.size() && w < utf8.size(); ++w)
      mask_[w] = int32_t(uint32_t(mask_[w]) & utf8[w]);
    // A set bit allows the token. Words of all ones (most of a JSON string's) are skipped.
    const int64_t n = std::min<int64_t>(vocab_, int64_t(logits.size()));
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    for (int64_t w = 0; w * 32 < n; ++w) {
      const uint32_t bits = uint32_t(mask_[size_t(w)]);
      if (bits == 0xffffffffu) continue;
      const int64_t end = std::min<int64_t>(n, (w + 1) * 32);
      for (int64_t i = w * 32; i < end; ++i)
        if (!(bits >> (i - w * 32) & 1u)) logits[size_t(i)] = kNegInf;
    }
    for (size_t i = size_t(n); i < logits.size(); ++i) logits[i] = kNegInf;
    for (TokenId id : barred_)
      if (size_t(id) < logits.size()) logits[size_t(id)] = kNegInf;
  }

  void accept(TokenId token) override {
    if (!matcher_.AcceptToken(token))
      fail("grammar: token ", token, " does not continue the output the grammar allows");
    utf8_state_ = utf8_->after(utf8_state_, token);
  }

  const char* name() const override { return "grammar"; }

 private:
  xgrammar::GrammarMatcher matcher_;
  int64_t vocab_;
  std::vector<int32_t> mask_;
  std::vector<TokenId> barred_;
  std::shared_ptr<const Utf8TokenMasks> utf8_;
  Utf8State utf8_state_ = Utf8State::kStart;
};

class XgGrammar final : public Grammar {
 public:
  XgGrammar(std::shared_ptr<const Utf8TokenMasks> utf8, xgrammar::CompiledGrammar g, int64_t vocab,
            std::vector<TokenId> barred = {})
      : utf8_(std::move(utf8)), g_(std::move(g)), vocab_(vocab), barred_(std::move(barred)) {}
  std::unique_ptr<LogitsProcessor> processor() const override {
    return std::make_unique<XgProcessor>(g_, vocab_, barred_, utf8_);
  }

 private:
  std::shared_ptr<const Utf8TokenMasks> utf8_;
  xgrammar::CompiledGrammar g_;
  int64_t vocab_;
  std::vector<TokenId> barred_;
};

}  // namespace

struct GrammarEngine::Impl {
  Impl(const std::vector<std::string>& bytes, const std::vector<TokenId>& stop)
      : info(bytes, xgrammar::VocabType::RAW, int(bytes.size()),
             std::vector<int32_t>(stop.begin(), stop.end())),
        // Compiling runs on the request's thread; one more worker thread at most, so that a
        // compile leaves a core to the decode loop on small machines.
        compiler(info, std::max(1, std::min(2, int(std::thread::hardware_concurrency()) / 2)),
                 /*cache_enabled=*/true, /*max_memory_bytes=*/int64_t(256) << 20),
        utf8(std::make_shared<const Utf8TokenMasks>(bytes)) {}
  xgrammar::TokenizerInfo info;
  xgrammar::GrammarCompiler compiler;
  std::shared_ptr<const Utf8TokenMasks> utf8;
};

bool GrammarEngine::available() { return true; }
const char* GrammarEngine::engine_name() { return "xgrammar 0.2.9"; }

GrammarEngine::GrammarEngine(const std::vector<std::string>& token_bytes,
                             std::vector<TokenId> stop_ids) {
  if (token_bytes.empty()) fail("grammar engine: the vocabulary is empty");
  for (TokenId id : stop_ids)
    if (id < 0 || size_t(id) >= token_bytes.size())
      fail("grammar engine: stop id ", id, " is outside the vocabulary [0, ", token_bytes.size(),
           ")");
  try {
    impl_ = std::make_unique<Impl>(token_bytes, stop_ids);
  } catch (const std::exception& e) {
    fail("grammar engine: xgrammar refused the vocabulary: ", e.what());
  }
}

GrammarEngine::~GrammarEngine() = default;

int64_t GrammarEngine::vocab() const { return impl_->info.GetVocabSize(); }

bool GrammarEngine::writes(TokenId id) const {
  const auto& v = impl_->info.GetDecodedVocab();
  return id >= 0 && size_t(id) < v.size() && !v[size_t(id)].empty();
}

bool GrammarEngine::stops(TokenId id) const {
  const auto& s = impl_->info.GetStopTokenIds();
  return std::find(s.begin(), s.end(), id) != s.end();
}

std::shared_ptr<const Grammar> GrammarEngine::compile(const GrammarSpec& spec) const {
  auto& c = impl_->compiler;
  // The engine's stop ids that this grammar may not end with.
  std::vector<TokenId> barred;
  if (!spec.end_ids.empty()) {
    for (TokenId id : spec.end_ids)
      if (!stops(id)) fail("grammar: end id ", id, " is not one of the stop ids");
    for (int32_t id : impl_->info.GetStopTokenIds())
      if (std::find(spec.end_ids.begin(), spec.end_ids.end(), id) == spec.end_ids.end())
        barred.push_back(id);
  }
  try {
    switch (spec.kind) {
      case GrammarKind::kJsonObject:
        return std::make_shared<XgGrammar>(
            impl_->utf8,
            c.CompileJSONSchema(kAnyObjectSchema, /*any_whitespace=*/false, std::nullopt,
                                std::nullopt, /*strict_mode=*/false),
            vocab());
      case GrammarKind::kJsonSchema:
        return std::make_shared<XgGrammar>(
            impl_->utf8,
            c.CompileJSONSchema(spec.text, /*any_whitespace=*/false, std::nullopt, std::nullopt,
                                /*strict_mode=*/true),
            vocab());
      case GrammarKind::kRegex:
        return std::make_shared<XgGrammar>(impl_->utf8, c.CompileRegex(spec.text), vocab());
      case GrammarKind::kEbnf:
        return std::make_shared<XgGrammar>(impl_->utf8, c.CompileGrammar(spec.text, "root"),
                                           vocab());
      case GrammarKind::kStructuralTag:
        return std::make_shared<XgGrammar>(impl_->utf8, c.CompileStructuralTag(spec.text), vocab(),
                                           std::move(barred));
      case GrammarKind::kChoice: {
        if (spec.choices.empty()) fail("no choices");
        std::string ebnf = "root ::= ";
        for (size_t i = 0; i < spec.choices.size(); ++i)
          ebnf += (i ? " | " : "") + ebnf_literal(spec.choices[i]);
        return std::make_shared<XgGrammar>(impl_->utf8, c.CompileGrammar(ebnf, "root"), vocab());
      }
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // xgrammar's messages start with a location in its sources ("[12:00:00] .../x.cc:42: ");
    // the client needs the part after it.
    std::string what = e.what();
    const size_t cut = what.find(": ", what.find(".cc:"));
    if (what.find(".cc:") != std::string::npos && cut != std::string::npos)
      what = what.substr(cut + 2);
    fail(what);
  }
  fail("grammar: unknown kind");
}

}  // namespace moex::generate
