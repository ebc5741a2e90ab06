// Who may call what on `moex serve`: which requests need the API key (all but GET /health,
// which load balancers probe, unless --health-needs-key). One policy for the intake, which
// answers 401 as soon as a head is in, and for the routes.
#pragma once

#include <string>
#include <string_view>

namespace moex::serve {

struct AccessOptions {
  std::string api_key;            // "": no request needs a key
  bool health_needs_key = false;  // --health-needs-key: /health too
};

class Access {
 public:
  explicit Access(AccessOptions options) : opt_(std::move(options)) {}

  const std::string& api_key() const { return opt_.api_key; }
  // Whether a request with this method and path (the target without its query) must carry
  // the key: with a key set, every one but GET or HEAD /health (unless health_needs_key).
  bool needs_key(std::string_view method, std::string_view path) const;

 private:
  AccessOptions opt_;
};

// The path of a request target: what comes before its '?'.
std::string_view target_path(std::string_view target);

}  // namespace moex::serve
