// GrammarEngine in a build without a grammar engine (xgrammar's sources were not fetched):
// available() is false and constructing one says how to get it. The server answers a
// response_format other than text with a 400 that says the same.
#include "core/error.h"
#include "generate/grammar.h"

namespace moex::generate {

struct GrammarEngine::Impl {};

bool GrammarEngine::available() { return false; }
const char* GrammarEngine::engine_name() { return ""; }

GrammarEngine::GrammarEngine(const std::vector<std::string>&, std::vector<TokenId>) {
  fail("this build of moex has no grammar engine (run scripts/fetch_xgrammar.sh and rebuild)");
}
GrammarEngine::~GrammarEngine() = default;
int64_t GrammarEngine::vocab() const { return 0; }
bool GrammarEngine::writes(TokenId) const { return false; }
bool GrammarEngine::stops(TokenId) const { return false; }
std::shared_ptr<const Grammar> GrammarEngine::compile(const GrammarSpec&) const {
  fail("this build of moex has no grammar engine");
}

}  // namespace moex::generate
