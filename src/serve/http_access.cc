// Access (see http_access.h).
#include "serve/http_access.h"

namespace moex::serve {

bool Access::needs_key(std::string_view method, std::string_view path) const {
  if (opt_.api_key.empty()) return false;
  const bool probe = (method == "GET" || method == "HEAD") && path == "/health";
  return !(probe && !opt_.health_needs_key);
}

std::string_view target_path(std::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace moex::serve
