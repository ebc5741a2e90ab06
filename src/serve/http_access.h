// Who may call what on `moex serve`: which requests need the API key (all but GET /health,
// which load balancers probe, unless --health-needs-key), and which browser origins may call
// it (CORS, --cors-origin). One policy for the intake, which answers 401 as soon as a head is
// in, and for the routes.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moex::serve {

struct AccessOptions {
  std::string api_key;            // "": no request needs a key
  bool health_needs_key = false;  // --health-needs-key: /health too
  // --cors-origin: "*" (any origin) or origins "scheme://host[:port]"; empty: no CORS fields
  // and OPTIONS is routed like any other method.
  std::vector<std::string> cors_origins;
};

using HeaderFields = std::vector<std::pair<std::string, std::string>>;

class Access {
 public:
  // moex::Error naming the value for a CORS origin that is not "*" or scheme://host[:port].
  explicit Access(AccessOptions options);

  const std::string& api_key() const { return opt_.api_key; }
  // Whether a request with this method and path (the target without its query) must carry
  // the key: with a key set, every one but GET or HEAD /health (unless health_needs_key) and,
  // with CORS on, OPTIONS (browsers send preflights without credentials).
  bool needs_key(std::string_view method, std::string_view path) const;

  bool cors() const { return !opt_.cors_origins.empty(); }
  // `origin` (a request's Origin field) is one CORS allows (ASCII case aside).
  bool origin_allowed(std::string_view origin) const;
  // The CORS fields of a response to a request from `origin` ("" when it sent none): none when
  // CORS is off or the origin is not allowed, else Access-Control-Allow-Origin (and Vary).
  HeaderFields cors_fields(std::string_view origin) const;
  // A preflight's fields for an allowed origin: cors_fields and the methods (GET, POST,
  // OPTIONS), the headers (Authorization, Content-Type and those the preflight names in
  // `requested`, its Access-Control-Request-Headers, when they are field names) and a max age.
  HeaderFields preflight_fields(std::string_view origin, std::string_view requested) const;

 private:
  AccessOptions opt_;
};

// The path of a request target: what comes before its '?'.
std::string_view target_path(std::string_view target);
// Header fields as they are written in a response head: "Name: value\r\n" each.
std::string header_lines(const HeaderFields& fields);

}  // namespace moex::serve
