// Methods of str, dict and list values (s.strip(), d.items(), ...) as bound callables; the
// mutating ones jinja2's ImmutableSandboxedEnvironment refuses are unsafe Undefined values.
#pragma once

#include <string>

#include "chat/value.h"

namespace moex::chat {

// obj.name as a callable, Value() (Undefined) when obj's type has no such method, or an unsafe
// Undefined (SecurityError when used) for a method that would modify obj.
Value bound_method(const Value& obj, const std::string& name);

}  // namespace moex::chat
