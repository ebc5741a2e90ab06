// Scratch buffers of the engine's mixers grow to the largest call and never shrink, so a
// decode step after a prefill reuses them.
#pragma once

#include <cstdint>
#include <vector>

namespace moex::model::engine {

inline void grow(std::vector<float>& v, int64_t size) {
  if (v.size() < size_t(size)) v.resize(size_t(size));
}

}  // namespace moex::model::engine
