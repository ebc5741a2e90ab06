// What one rank of an expert-parallel run reads, and its share of each MoE layer.
#include "model/engine/expert_parallel.h"

#include <algorithm>
#include <cstring>
#include <unistd.h>
#include <map>

#include "core/dtype.h"
#include "core/error.h"
#include "core/file_read.h"
#include "model/gguf/gguf_model.h"

namespace moex::model::engine {

namespace {

using Ranges = std::map<const io::SafetensorsFile*, std::vector<std::pair<uint64_t, uint64_t>>>;

// [p, p + bytes) as a range of the file whose mapping holds it; false when none does (a copy).
bool add_range(const io::Checkpoint& ckpt, const void* p, uint64_t bytes, Ranges* out) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (const auto& f : ckpt.files()) {
    const uint8_t* m = f->mapping();
    if (b >= m && b + bytes <= m + f->file_size()) {
      (*out)[f.get()].push_back({uint64_t(b - m), uint64_t(b - m) + bytes});
      return true;
    }
  }
  return false;
}

// Expert e's rows of one stacked projection: packed weights, scales, biases.
void add_expert(const io::Checkpoint& ckpt, const kernels::QuantWeightsView& v, int64_t e,
                Ranges* out) {
  if (!v.w) return;
  add_range(ckpt, v.row(e, 0), uint64_t(v.n * v.row_bytes()), out);
  const uint64_t sb = uint64_t(v.n * v.scale_row_bytes());
  if (v.scales && sb) add_range(ckpt, v.scale_row(e, 0), sb, out);
  if (v.biases && sb) add_range(ckpt, v.bias_row(e, 0), sb, out);
}

}  // namespace

std::vector<FileRange> expert_parallel_reads(const io::Checkpoint& ckpt,
                                             const std::vector<TensorRecord>& tensors,
                                             const ModelConfig& cfg, const ModelWeights& w,
                                             const dist::ExpertPlacement& placement, int rank) {
  Ranges experts, owned;
  for (const TensorRecord& t : tensors) {
    if (t.role != TensorRole::kExperts) continue;
    if (const io::TensorInfo* ti = ckpt.find(t.name))
      add_range(ckpt, ti->data, ti->nbytes, &experts);
  }
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    if (cfg.layers[size_t(l)].ffn != FfnKind::kMoe) continue;
    const kernels::MoeExpertsView& ex = w.layers[size_t(l)].moe.experts;
    for (int64_t e = 0; e < cfg.moe.num_experts; ++e) {
      if (placement.owner(l, e) != rank) continue;
      for (const kernels::QuantWeightsView* v : {&ex.gate, &ex.up, &ex.down})
        add_expert(ckpt, *v, e, &owned);
    }
  }
  std::vector<FileRange> out;
  for (const auto& f : ckpt.files()) {
    // The file minus the expert tensors, plus the owned rows; then sorted and merged.
    std::vector<std::pair<uint64_t, uint64_t>> skip = experts[f.get()], keep = owned[f.get()];
    std::sort(skip.begin(), skip.end());
    uint64_t at = 0;
    for (const auto& [b, e] : skip) {
      if (b > at) keep.push_back({at, b});
      at = std::max(at, e);
    }
    if (at < f->file_size()) keep.push_back({at, f->file_size()});
    std::sort(keep.begin(), keep.end());
    for (const auto& [b, e] : keep) {
      if (!out.empty() && out.back().file == f.get() && out.back().offset + out.back().bytes >= b) {
        out.back().bytes = std::max(out.back().offset + out.back().bytes, e) - out.back().offset;
      } else {
        out.push_back({f.get(), b, e - b});
      }
    }
  }
  return out;
}

namespace {

// FNV-1a over 8-byte words (then the tail bytes). Long runs go through four interleaved
// lanes (32-byte strides) folded into the running hash, so the multiply chain does not bound
// the speed when every byte of a checkpoint is hashed.
struct Fingerprint {
  uint64_t h = 1469598103934665603ull;
  static constexpr uint64_t kPrime = 1099511628211ull;
  void add(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    size_t i = 0;
    if (n >= 4096) {
      uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
      for (; i + 32 <= n; i += 32) {
        for (int k = 0; k < 4; ++k) {
          uint64_t w;
          std::memcpy(&w, b + i + 8 * k, 8);
          lane[k] = (lane[k] ^ w) * kPrime;
        }
      }
      for (uint64_t l : lane) h = (h ^ l) * kPrime;
    }
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      h = (h ^ w) * kPrime;
    }
    for (; i < n; ++i) h = (h ^ b[i]) * kPrime;
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }
  void add(int64_t v) { add(&v, sizeof v); }
};

}  // namespace

namespace {

// Adds a GGUF file's size and its first `limit` bytes (all of them when limit < 0) to f.
void add_gguf_bytes(Fingerprint& f, const std::string& path, int64_t limit) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, "GGUF file", &size);
  std::vector<uint8_t> buf(size_t(1) << 20);
  uint64_t left = limit < 0 ? size : std::min<uint64_t>(size, uint64_t(limit));
  f.add(int64_t(size));
  while (left > 0) {
    const ssize_t got = ::read(fd, buf.data(), size_t(std::min<uint64_t>(left, buf.size())));
    if (got <= 0) {
      ::close(fd);
      fail(path, ": GGUF file: read failed while fingerprinting it for expert parallelism");
    }
    f.add(buf.data(), size_t(got));
    left -= uint64_t(got);
  }
  ::close(fd);
}

}  // namespace

uint64_t checkpoint_fingerprint(const std::string& model_path, const io::Checkpoint& ckpt,
                                const std::vector<TensorRecord>& tensors, bool every_byte) {
  Fingerprint f;
  // The model's description: config.json, or a GGUF file's header, metadata and tokenizer
  // (its first 16 MiB: a GGUF's tensors are repacked copies, so `files` below has no mapping
  // of it to read for every_byte; the whole file is hashed here instead).
  const bool gguf = is_gguf_path(model_path);
  if (gguf)
    add_gguf_bytes(f, model_path, every_byte ? -1 : int64_t(16) << 20);
  else
    f.add(read_small_file(model_path + "/config.json", int64_t(64) << 20, "config.json"));
  for (const std::string& name : ckpt.names()) {
    const io::TensorInfo& t = ckpt.require(name);
    f.add(name);
    f.add(int64_t(t.dtype));
    for (int64_t d : t.shape) f.add(d);
    f.add(int64_t(t.nbytes));
  }
  for (const TensorRecord& r : tensors)
    if (r.role == TensorRole::kRouter || r.role == TensorRole::kNorm)
      if (const io::TensorInfo* t = ckpt.find(r.name)) f.add(t->data, t->nbytes);
  if (every_byte && !gguf) {
    for (const auto& file : ckpt.files()) {
      f.add(file->mapping(), size_t(file->file_size()));
      f.add(int64_t(file->file_size()));
    }
  }
  return f.h;
}

void check_same_checkpoint(dist::Collective& collective, uint64_t fingerprint,
                           const std::string& dir, bool every_byte) {
  // Two exact halves of the 64 bits in doubles, and what they cover.
  const std::vector<double> all = collective.gather_to_root(
      {double(fingerprint >> 32), double(fingerprint & 0xffffffffull), every_byte ? 1.0 : 0.0});
  // differ[0]: 1 when the ranks disagree on every_byte (then the rest names those ranks).
  std::vector<int32_t> differ = {0};
  for (size_t r = 1; 3 * r + 2 < all.size(); ++r)
    if (all[3 * r + 2] != all[2]) differ.push_back(int32_t(r));
  if (differ.size() > 1) {
    differ[0] = 1;
  } else {
    for (size_t r = 1; 3 * r + 2 < all.size(); ++r)
      if (all[3 * r] != all[0] || all[3 * r + 1] != all[1]) differ.push_back(int32_t(r));
  }
  collective.broadcast_from_root(differ);
  if (differ.size() == 1) return;
  std::string ranks;
  for (size_t i = 1; i < differ.size(); ++i) ranks += str_cat(i == 1 ? "" : ", ", differ[i]);
  if (differ[0] == 1)
    fail("expert parallelism: --verify-checkpoint on some ranks only (rank",
         differ.size() > 2 ? "s " : " ", ranks, " not as rank 0); give it to every rank or to none");
  fail("expert parallelism: the checkpoint of rank", differ.size() > 2 ? "s " : " ", ranks,
       " differs from rank 0's (",
       every_byte ? "some byte of its files"
                  : "config.json, the tensor list, or the router and norm weights",
       "); every rank must open the same checkpoint (this rank opened ", dir, ")");
}

ExpertParallelLayer expert_parallel_layer(const dist::ExpertPlacement& placement,
                                          dist::Collective& collective, int64_t layer,
                                          int64_t moe_index) {
  ExpertParallelLayer ep;
  ep.owned = placement.owned_mask(collective.rank(), layer);
  ep.owner.resize(size_t(placement.experts()));
  for (int64_t e = 0; e < placement.experts(); ++e) ep.owner[size_t(e)] = placement.owner(layer, e);
  ep.shared_rank = int(moe_index % collective.size());
  ep.collective = &collective;
  return ep;
}

}  // namespace moex::model::engine
