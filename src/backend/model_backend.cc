// The contract's shared parts: names of its ops and memories, the refusal of an op a backend
// lacks, and KV caches over a backend's allocations.
#include "backend/op.h"

#include <string>

#include "backend/buffer.h"
#include "backend/model_backend.h"
#include "core/error.h"

namespace moex::backend {

const char* op_name(Op op) {
  switch (op) {
#define MOEX_BACKEND_OP_NAME(id, name) \
  case Op::id:                         \
    return name;
    MOEX_BACKEND_OPS(MOEX_BACKEND_OP_NAME)
#undef MOEX_BACKEND_OP_NAME
    case Op::kCount:
      break;
  }
  return "?";
}

const char* memory_name(Memory m) { return m == Memory::kHost ? "host" : "cuda"; }

ops::KvCache ModelBackend::new_kv_cache(int64_t kv_heads, int64_t head_dim, int64_t capacity,
                                        bool values, DType dtype) const {
  if (kv_heads < 1 || head_dim < 1 || capacity < 1)
    fail(name(), " backend: a KV cache of kv_heads ", kv_heads, ", head_dim ", head_dim,
         ", capacity ", capacity);
  if (dtype != DType::F32 && (dtype != DType::F16 || memory() != Memory::kHost))
    fail(name(), " backend: a KV cache of ", dtype_name(dtype),
         " elements (this backend keeps its KV cache in f32; --kv-cache f16 runs on the CPU)");
  const int64_t plane = kv_heads * head_dim * capacity * int64_t(dtype_size(dtype));
  return ops::KvCache(alloc(plane), values ? alloc(plane) : Buffer(), kv_heads, head_dim,
                      capacity, dtype);
}

void require_op(const ModelBackend& be, Op op) {
  if (!be.supports_op(op))
    throw Error(std::string("the ") + be.name() + " backend has no " + op_name(op) +
                " op (backend/model_backend.h; docs/architecture.md lists each backend's ops)");
}

}  // namespace moex::backend
