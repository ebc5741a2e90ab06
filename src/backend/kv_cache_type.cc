// The run's KV cache element type (kv_cache_type.h): a flag's value, else the environment's.
#include "backend/kv_cache_type.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace moex::backend {

namespace {
std::atomic<int> g_type{-1};  // -1: not decided yet
}  // namespace

DType parse_kv_cache_type(std::string_view s, std::string_view what) {
  if (s == "f32") return DType::F32;
  if (s == "f16") return DType::F16;
  fail(what, ": '", std::string(s), "' is not a KV cache type (expected f32 or f16)");
}

DType kv_cache_type() {
  const int v = g_type.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<DType>(v);
  DType t = DType::F32;
  if (const char* env = std::getenv("MOEX_KV_CACHE"))
    t = parse_kv_cache_type(env, "environment variable MOEX_KV_CACHE");
  g_type.store(static_cast<int>(t), std::memory_order_relaxed);
  return t;
}

void set_kv_cache_type(DType t) {
  if (t != DType::F32 && t != DType::F16)
    fail("KV cache type ", dtype_name(t), ": f32 or f16 only");
  g_type.store(static_cast<int>(t), std::memory_order_relaxed);
}

const char* kv_cache_type_name(DType t) { return t == DType::F16 ? "f16" : "f32"; }

}  // namespace moex::backend
