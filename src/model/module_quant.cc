// resolve_module_quant: override, else packed shapes, else the global setting.
#include "model/module_quant.h"

#include "quant/shape_check.h"

namespace moex::model {

std::optional<io::ModuleQuant> resolve_module_quant(const io::QuantConfig& config,
                                                    const std::string& path,
                                                    const io::TensorInfo* weight,
                                                    const io::TensorInfo* scales, int64_t in) {
  if (config.overrides().count(path)) return config.lookup(path);
  if (weight && scales) {
    if (std::optional<quant::Format> f =
            quant::infer_packed_format(weight->shape, scales->shape, scales->dtype, in)) {
      io::ModuleQuant q;
      q.bits = f->bits;
      q.group_size = f->group_size;
      q.mode = quant::mode_name(f->mode);
      return q;
    }
  }
  return config.lookup(path);
}

}  // namespace moex::model
