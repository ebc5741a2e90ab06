// The element type of the KV caches a run makes (backend/kv_cache.h): f32 (the default; every
// precision tier's figures are measured with it) or f16 (`--kv-cache f16`, MOEX_KV_CACHE=f16:
// half the memory a context holds and half the bytes decode attention streams, at the cost of
// rounding every cached key and value to 11 significant bits, as llama.cpp's default cache).
// Multi-head latent attention's cache (DeepSeek) stays f32 either way.
#pragma once

#include <string_view>

#include "core/dtype.h"

namespace moex::backend {

// "f32" -> DType::F32, "f16" -> DType::F16; moex::Error naming `what` otherwise.
DType parse_kv_cache_type(std::string_view s, std::string_view what);
// set_kv_cache_type's value, else MOEX_KV_CACHE (validated: a bad value throws moex::Error
// naming the variable), else F32.
DType kv_cache_type();
void set_kv_cache_type(DType t);
// "f32" or "f16".
const char* kv_cache_type_name(DType t);

}  // namespace moex::backend
