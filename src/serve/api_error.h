// An error answered as an OpenAI error object: the HTTP status, the message, the error type
// and the request parameter at fault ({"error": {"message", "type", "param", "code"}}).
// `code` is null but for the few errors OpenAI names (context_length_exceeded).
#pragma once

#include <stdexcept>
#include <string>

namespace moex::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string param, const std::string& message,
           std::string code = "")
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }    // "invalid_request_error", ...
  const std::string& param() const { return param_; }  // "" when no field is at fault (null)
  const std::string& code() const { return code_; }    // "" for none (null)

 private:
  int status_;
  std::string type_, param_, code_;
};

// HTTP 400, type invalid_request_error, naming `param` ("" for none).
[[noreturn]] inline void bad_request(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", param, message);
}

// HTTP 400 with code "context_length_exceeded" (OpenAI's): the prompt, or the prompt and the
// tokens asked for, do not fit the context. `param` is the prompt's field.
[[noreturn]] inline void context_exceeded(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", param, message, "context_length_exceeded");
}

}  // namespace moex::serve
