// place_experts and its report (see experts_placement.h).
#include "moe/experts_placement.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace moex::moe {

namespace {

void check(const PlacementInputs& in) {
  if (in.request.cpu_layers < 0)
    fail("experts placement: --n-cpu-moe must be 0 or more, got ", in.request.cpu_layers);
  if (in.num_layers < 0) fail("experts placement: ", in.num_layers, " layers");
  if (in.reserve_bytes < 0) fail("experts placement: reserve of ", in.reserve_bytes, " bytes");
  if (in.free_bytes && *in.free_bytes < 0)
    fail("experts placement: device free memory of ", *in.free_bytes, " bytes");
  int64_t previous = -1;
  for (const MoeLayerBytes& m : in.moe_layers) {
    if (m.layer <= previous || m.layer >= in.num_layers)
      fail("experts placement: MoE layer ", m.layer, " is out of order or outside the model's ",
           in.num_layers, " layers");
    if (m.bytes <= 0) fail("experts placement: MoE layer ", m.layer, " has ", m.bytes, " bytes");
    previous = m.layer;
  }
}

// "1.2 GiB" / "850.0 MiB".
std::string gib(int64_t bytes) {
  char buf[48];
  const double b = double(bytes);
  if (bytes >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(int64_t{1} << 30));
  else
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / double(1 << 20));
  return buf;
}

// "layer 3" / "layers 3-11".
std::string range(int64_t first, int64_t last) {
  return first == last ? str_cat("layer ", first) : str_cat("layers ", first, "-", last);
}

}  // namespace

ExpertsPlacement place_experts(const PlacementInputs& in) {
  check(in);
  ExpertsPlacement p;
  p.on_device.assign(size_t(in.num_layers), 0);
  // Without fit every layer from N on goes to the device; with fit the budget decides, and
  // without a device nothing does.
  const bool unlimited = !in.request.fit;
  const int64_t budget =
      in.request.fit && in.free_bytes ? std::max<int64_t>(0, *in.free_bytes - in.reserve_bytes) : 0;
  int64_t used = 0;
  // From the last MoE layer backwards; the first layer that does not fit ends the walk, so
  // the device holds a suffix of the layers (what some --n-cpu-moe value gives).
  for (auto it = in.moe_layers.rbegin(); it != in.moe_layers.rend() && !in.host_only; ++it) {
    if (it->layer < in.request.cpu_layers) break;
    if (!unlimited && it->bytes > budget - used) break;
    used += it->bytes;
    p.on_device[size_t(it->layer)] = 1;
    ++p.device_layers;
  }
  p.device_bytes = used;
  p.host_layers = int64_t(in.moe_layers.size()) - p.device_layers;
  p.first_device_layer = in.num_layers;
  for (const MoeLayerBytes& m : in.moe_layers)
    if (p.on_device[size_t(m.layer)]) {
      p.first_device_layer = m.layer;
      break;
    }
  return p;
}

std::string describe_placement(const ExpertsPlacement& p, const PlacementInputs& in,
                               const std::string& device) {
  if (in.moe_layers.empty()) return "experts: the model has no MoE layers";
  std::string host_part, device_part;
  int64_t host_first = -1, host_last = -1, dev_first = -1, dev_last = -1;
  for (const MoeLayerBytes& m : in.moe_layers) {
    const bool dev = size_t(m.layer) < p.on_device.size() && p.on_device[size_t(m.layer)];
    int64_t& first = dev ? dev_first : host_first;
    if (first < 0) first = m.layer;
    (dev ? dev_last : host_last) = m.layer;
  }
  std::string out = "experts: ";
  if (host_first >= 0) out += range(host_first, host_last) + " on cpu";
  if (host_first >= 0 && dev_first >= 0) out += ", ";
  if (dev_first >= 0) out += range(dev_first, dev_last) + " on " + device;
  int64_t largest = 0;
  bool uniform = true;
  for (const MoeLayerBytes& m : in.moe_layers) {
    uniform = uniform && (largest == 0 || m.bytes == largest);
    largest = std::max(largest, m.bytes);
  }
  const std::string per_layer =
      str_cat("experts need ", uniform ? "" : "up to ", gib(largest), "/layer");
  if (!in.request.fit)
    return str_cat(out, " (--n-cpu-moe ", in.request.cpu_layers, "; ", per_layer, ")");
  if (!in.free_bytes)
    return str_cat(out, " (--experts-on auto: the experts' backend has no device memory)");
  return str_cat(out, " (--experts-on auto: free ", gib(*in.free_bytes), ", reserve ",
                 gib(in.reserve_bytes), ", ", per_layer, ")");
}

}  // namespace moex::moe
