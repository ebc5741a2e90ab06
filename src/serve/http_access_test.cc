// Access: which requests need the API key, as a table.
#include "serve/http_access.h"

#include <gtest/gtest.h>

namespace moex::serve {
namespace {

TEST(Access, OnlyTheHealthProbeGoesWithoutTheKey) {
  struct Case {
    std::string key;
    bool health_needs_key;
    std::string method, path;
    bool needs;
  };
  const Case cases[] = {
      {"", false, "POST", "/v1/completions", false},  // no key set: nothing needs one
      {"", true, "GET", "/health", false},
      {"k", false, "GET", "/health", false},
      {"k", false, "HEAD", "/health", false},
      {"k", false, "POST", "/health", true},
      {"k", false, "GET", "/health/", true},
      {"k", false, "GET", "/healthz", true},
      {"k", false, "GET", "/Health", true},
      {"k", false, "GET", "/v1/models", true},
      {"k", false, "POST", "/v1/chat/completions", true},
      {"k", false, "GET", "/metrics", true},
      {"k", false, "OPTIONS", "/v1/models", true},
      {"k", true, "GET", "/health", true},
      {"k", true, "HEAD", "/health", true},
  };
  for (const Case& c : cases) {
    const Access a({.api_key = c.key, .health_needs_key = c.health_needs_key});
    EXPECT_EQ(a.needs_key(c.method, c.path), c.needs)
        << "key '" << c.key << "' health_needs_key " << c.health_needs_key << ": " << c.method
        << " " << c.path;
  }
}

TEST(Access, ThePathIsTheTargetBeforeItsQuery) {
  EXPECT_EQ(target_path("/health?verbose=1"), "/health");
  EXPECT_EQ(target_path("/health"), "/health");
  EXPECT_EQ(target_path("?x"), "");
  EXPECT_EQ(target_path(""), "");
}

}  // namespace
}  // namespace moex::serve
