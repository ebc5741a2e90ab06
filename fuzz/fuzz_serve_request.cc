// Fuzz target: an HTTP request body as `moex serve` receives it, through serve::parse_request
// for both endpoints, then stop strings on streamed text. Input: body [NUL text], the text cut
// into pieces at each 0x02 byte. A refusal must be an ApiError (HTTP 400); what is accepted
// must be runnable (a non-empty prompt that fits the context, ids in the vocabulary, bounded
// stop strings, sampler values in range). StopStrings must release exactly the text before
// the earliest stop string, however the text is cut.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "serve/api_error.h"
#include "serve/chat_prompt.h"
#include "serve/request.h"
#include "core/error.h"
#include "generate/generator.h"
#include "generate/stop_strings.h"
#include "tokenizer/synthetic_vocab.h"
#include "tokenizer/tokenizer.h"

namespace {

using moex::serve::Api;
using moex::serve::ApiRequest;

constexpr int64_t kVocab = 1000, kContext = 64;

struct Model {
  Model() {
    const std::string dir = moex::fuzz::scratch_dir() + "/serve_model";
    moex::write_synthetic_tokenizer(dir, kVocab);
    std::ofstream(dir + "/chat_template.jinja")
        << "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] "
           "+ '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
           "{{ '<|im_start|>assistant\\n' }}{%- endif %}";
    tokenizer = std::make_unique<moex::Tokenizer>(moex::Tokenizer::load(dir));
    chat = std::make_unique<moex::serve::ChatPrompt>(dir, *tokenizer);
    served.name = "fuzz";
    served.tokenizer = tokenizer.get();
    served.chat = chat.get();
    served.context = kContext;
    served.vocab = kVocab;
  }
  std::unique_ptr<moex::Tokenizer> tokenizer;
  std::unique_ptr<moex::serve::ChatPrompt> chat;
  moex::serve::ServedModel served;
};

void fail(const std::string& what) { moex::fuzz::invariant_failed("fuzz_serve_request", what); }

void check_accepted(const ApiRequest& r) {
  const auto& g = r.generation;
  if (g.prompt.empty() || int64_t(g.prompt.size()) >= kContext) fail("prompt size");
  for (int32_t id : g.prompt)
    if (id < 0 || id >= kVocab) fail("prompt id outside the vocabulary");
  if (g.params.max_tokens < 1) fail("max_tokens < 1");
  try {  // accepted generation parameters are ones a Generator takes (bias ids, penalty ranges)
    moex::generate::Generator::validate(g.params, kVocab);
  } catch (const moex::Error& e) {
    fail(std::string("accepted parameters the Generator refuses: ") + e.what());
  }
  if (g.top_logprobs < 0 || g.top_logprobs > moex::serve::kMaxTopLogprobs) fail("top_logprobs");
  if (!g.logprobs && g.top_logprobs != 0) fail("top_logprobs without logprobs");
  const auto& s = g.params.sampling;
  if (!std::isfinite(s.temperature) || s.temperature < 0) fail("temperature");
  if (!(s.top_p > 0 && s.top_p <= 1)) fail("top_p");
  if (!(s.min_p >= 0 && s.min_p <= 1)) fail("min_p");
  if (s.top_k < 0) fail("top_k");
  if (r.stop.size() > size_t(moex::serve::kMaxStopStrings)) fail("too many stop strings");
  for (const std::string& stop : r.stop)
    if (stop.empty() || stop.size() > moex::serve::kMaxStopBytes) fail("stop string size");
}

void check_stop_matcher(const std::vector<std::string>& stops, std::string_view text) {
  std::vector<std::string> pieces(1);
  for (char c : text) {
    if (c == '\x02')
      pieces.emplace_back();
    else
      pieces.back() += c;
  }
  std::string full;
  for (const std::string& p : pieces) full += p;
  size_t first = std::string::npos;
  for (const std::string& s : stops) first = std::min(first, full.find(s));
  moex::generate::StopStrings m(stops);
  std::string out;
  for (const std::string& p : pieces) {
    out += m.push(p);
    if (m.held() > 0 && m.stopped()) fail("text held after a match");
  }
  out += m.flush();
  const std::string want = first == std::string::npos ? full : full.substr(0, first);
  if (out != want) fail("StopStrings released other text than what precedes the first match");
  if (m.stopped() != (first != std::string::npos)) fail("StopStrings stopped() disagrees");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Model model;
  const std::vector<std::string_view> parts = moex::fuzz::split_at_nul(data, size, 2);
  std::vector<std::string> stops = {"ab", "\xC3\xA9", "b\x01"};
  for (Api api : {Api::kChat, Api::kCompletion}) {
    try {
      const ApiRequest r = moex::serve::parse_request(api, parts[0], model.served);
      check_accepted(r);
      if (!r.stop.empty()) stops = r.stop;
    } catch (const moex::serve::ApiError& e) {
      if (e.status() != 400) fail("a refusal that is not a 400");
    }
  }
  if (parts.size() > 1) check_stop_matcher(stops, parts[1]);
  return 0;
}
