// An error answered as an OpenAI error object: the HTTP status, the message, the error type
// and the request parameter at fault ({"error": {"message", "type", "param", "code"}}).
#pragma once

#include <stdexcept>
#include <string>

namespace moex::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string param, const std::string& message)
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }    // "invalid_request_error", ...
  const std::string& param() const { return param_; }  // "" when no field is at fault (null)

 private:
  int status_;
  std::string type_, param_;
};

// HTTP 400, type invalid_request_error, naming `param` ("" for none).
[[noreturn]] inline void bad_request(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", param, message);
}

}  // namespace moex::serve
