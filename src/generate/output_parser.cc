// OutputParserChain (see output_parser.h).
#include "generate/output_parser.h"

namespace moex::generate {

std::string OutputParserChain::push(std::string_view text) {
  std::string t(text);
  for (auto& p : parsers_) t = p->push(t);
  return t;
}

// Each parser's held text goes through the parsers after it before their own flush.
std::string OutputParserChain::flush() {
  std::string t;
  for (auto& p : parsers_) {
    t = p->push(t);
    t += p->flush();
  }
  return t;
}

bool OutputParserChain::stopped() const {
  for (const auto& p : parsers_)
    if (p->stopped()) return true;
  return false;
}

}  // namespace moex::generate
