// Access: which requests need the API key, as a table; CORS origins checked, and the fields
// answered for allowed origins only.
#include "serve/http_access.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace moex::serve {
namespace {

Access access(const std::string& key, bool health_needs_key = false,
              std::vector<std::string> origins = {}) {
  AccessOptions o;
  o.api_key = key;
  o.health_needs_key = health_needs_key;
  o.cors_origins = std::move(origins);
  return Access(std::move(o));
}

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
    const Access a = access(c.key, c.health_needs_key);
    EXPECT_EQ(a.needs_key(c.method, c.path), c.needs)
        << "key '" << c.key << "' health_needs_key " << c.health_needs_key << ": " << c.method
        << " " << c.path;
  }
}

// With CORS on, a preflight (OPTIONS) needs no key: browsers send it without credentials.
TEST(Access, WithCorsOptionsNeedsNoKey) {
  const Access off = access("k");
  EXPECT_TRUE(off.needs_key("OPTIONS", "/v1/chat/completions"));
  const Access on = access("k", false, {"https://app.example"});
  EXPECT_FALSE(on.needs_key("OPTIONS", "/v1/chat/completions"));
  EXPECT_TRUE(on.needs_key("POST", "/v1/chat/completions"));
}

TEST(Access, CorsOriginsAreCheckedAtStart) {
  for (const char* bad : {"", "app.example", "https://app.example/", "https://app.example/x",
                          "ftp://app.example", "https://", "https://a b", "**"}) {
    EXPECT_THROW(access("", false, {bad}), Error) << bad;
  }
  for (const char* good :
       {"*", "http://localhost:3000", "https://app.example", "HTTPS://A.b", "http://[::1]:8080"}) {
    EXPECT_NO_THROW(access("", false, {good})) << good;
  }
}

TEST(Access, CorsFieldsForAnAllowedOriginOnly) {
  const Access off = access("");
  EXPECT_FALSE(off.cors());
  EXPECT_TRUE(off.cors_fields("https://app.example").empty());

  const Access listed = access("", false, {"https://app.example", "http://localhost:3000"});
  EXPECT_TRUE(listed.cors());
  EXPECT_EQ(
      listed.cors_fields("https://app.example"),
      (HeaderFields{{"Access-Control-Allow-Origin", "https://app.example"}, {"Vary", "Origin"}}));
  EXPECT_EQ(listed.cors_fields("http://localhost:3000")[0].second, "http://localhost:3000");
  EXPECT_TRUE(listed.origin_allowed("https://APP.example"));  // hosts: ASCII case aside
  for (const char* other :
       {"", "https://app.example.evil", "http://app.example", "https://app.example:443", "null"})
    EXPECT_TRUE(listed.cors_fields(other).empty()) << other;

  const Access any = access("", false, {"*"});
  EXPECT_EQ(any.cors_fields("https://anyone.example"),
            (HeaderFields{{"Access-Control-Allow-Origin", "*"}}));
  EXPECT_TRUE(any.cors_fields("").empty());  // no Origin: not a browser's cross-origin call
}

TEST(Access, PreflightNamesMethodsAndHeaders) {
  const Access a = access("", false, {"https://app.example"});
  EXPECT_TRUE(a.preflight_fields("https://other.example", "").empty());
  const HeaderFields f = a.preflight_fields(
      "https://app.example", "authorization, content-type,X-Stainless-Lang , bad name,,x-a");
  const HeaderFields want = {
      {"Access-Control-Allow-Origin", "https://app.example"},
      {"Vary", "Origin"},
      {"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
      {"Access-Control-Allow-Headers", "Authorization, Content-Type, X-Stainless-Lang, x-a"},
      {"Access-Control-Max-Age", "600"}};
  EXPECT_EQ(f, want);
  EXPECT_EQ(a.preflight_fields("https://app.example", "")[3].second, "Authorization, Content-Type");
}

TEST(Access, HeaderLinesAsInAResponseHead) {
  EXPECT_EQ(header_lines({{"A", "1"}, {"Vary", "Origin"}}), "A: 1\r\nVary: Origin\r\n");
  EXPECT_EQ(header_lines({}), "");
}

TEST(Access, ThePathIsTheTargetBeforeItsQuery) {
  EXPECT_EQ(target_path("/health?verbose=1"), "/health");
  EXPECT_EQ(target_path("/health"), "/health");
  EXPECT_EQ(target_path("?x"), "");
  EXPECT_EQ(target_path(""), "");
}

}  // namespace
}  // namespace moex::serve
