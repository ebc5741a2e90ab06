// Names of the contract's ops and memories, and the refusal of an op a backend lacks.
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

void require_op(const ModelBackend& be, Op op) {
  if (!be.supports_op(op))
    throw Error(std::string("the ") + be.name() + " backend has no " + op_name(op) +
                " op (backend/model_backend.h; docs/architecture.md lists each backend's ops)");
}

}  // namespace moex::backend
