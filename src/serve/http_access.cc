// Access (see http_access.h).
#include "serve/http_access.h"

#include "serve/http_framing.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace moex::serve {
namespace {

// Preflight answers are cached by browsers this long (seconds).
constexpr const char* kMaxAge = "600";
// A preflight's Access-Control-Request-Headers beyond this is not echoed.
constexpr size_t kMaxRequestedHeaders = 2048;

bool same_ascii(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(uint8_t(x)) == std::tolower(uint8_t(y));
         });
}

void check_origin(const std::string& o) {
  if (o == "*") return;
  const size_t sep = o.find("://");
  const std::string_view scheme = std::string_view(o).substr(0, sep);
  const std::string_view host = sep == std::string::npos ? "" : std::string_view(o).substr(sep + 3);
  const bool ok =
      (same_ascii(scheme, "http") || same_ascii(scheme, "https")) && !host.empty() &&
      std::all_of(host.begin(), host.end(), [](char c) {
        return std::isalnum(uint8_t(c)) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
      });
  if (!ok)
    fail(
        "--cors-origin: expected * or an origin such as https://app.example.com:8443 "
        "(scheme://host[:port], no path or trailing slash), got '",
        o, "'");
}

}  // namespace

Access::Access(AccessOptions options) : opt_(std::move(options)) {
  for (const std::string& o : opt_.cors_origins) check_origin(o);
}

bool Access::needs_key(std::string_view method, std::string_view path) const {
  if (opt_.api_key.empty()) return false;
  if (method == "OPTIONS" && cors()) return false;
  const bool probe = (method == "GET" || method == "HEAD") && path == "/health";
  return !(probe && !opt_.health_needs_key);
}

bool Access::origin_allowed(std::string_view origin) const {
  if (origin.empty()) return false;
  return std::any_of(opt_.cors_origins.begin(), opt_.cors_origins.end(),
                     [&](const std::string& o) { return o == "*" || same_ascii(o, origin); });
}

HeaderFields Access::cors_fields(std::string_view origin) const {
  if (!origin_allowed(origin)) return {};
  const bool any =
      std::find(opt_.cors_origins.begin(), opt_.cors_origins.end(), "*") != opt_.cors_origins.end();
  if (any) return {{"Access-Control-Allow-Origin", "*"}};
  // The answer depends on the Origin field: caches must keep one per origin.
  return {{"Access-Control-Allow-Origin", std::string(origin)}, {"Vary", "Origin"}};
}

HeaderFields Access::preflight_fields(std::string_view origin, std::string_view requested) const {
  HeaderFields out = cors_fields(origin);
  if (out.empty()) return out;
  // Clients send headers of their own (the openai JavaScript library's X-Stainless-*): the
  // names the preflight asks for are allowed when they are field names.
  std::string headers = "Authorization, Content-Type";
  if (requested.size() <= kMaxRequestedHeaders) {
    while (!requested.empty()) {
      const std::string_view item = requested.substr(0, requested.find(','));
      requested.remove_prefix(std::min(requested.size(), item.size() + 1));
      const std::string_view name = http_trim(item);
      if (name.empty() || !std::all_of(name.begin(), name.end(), http_token_char)) continue;
      if (same_ascii(name, "authorization") || same_ascii(name, "content-type")) continue;
      headers += str_cat(", ", name);
    }
  }
  out.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  out.emplace_back("Access-Control-Allow-Headers", headers);
  out.emplace_back("Access-Control-Max-Age", kMaxAge);
  return out;
}

std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

std::string header_lines(const HeaderFields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) out += str_cat(name, ": ", value, "\r\n");
  return out;
}

}  // namespace moex::serve
