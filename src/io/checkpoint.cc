// Checkpoint: chooses the files of a checkpoint directory, validates the shard index, and
// merges the tensors of every file into one sorted name -> view map.
#include "io/checkpoint.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "io/json_config.h"

namespace moex::io {

namespace fs = std::filesystem;

namespace {
constexpr const char* kSingleName = "model.safetensors";

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// weight_map values must name files inside the directory itself.
bool is_plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}
}  // namespace

void Checkpoint::add_file(std::unique_ptr<SafetensorsFile> f, const std::string& source) {
  for (const TensorInfo& t : f->tensors()) {
    auto [it, inserted] = by_name_.emplace(t.name, &t);
    if (!inserted)
      fail(source, ": tensor '", t.name, "' is in two files, '", it->second->file, "' and '", t.file,
           "'; expected each tensor in exactly one file");
    total_bytes_ += t.nbytes;
  }
  files_.push_back(std::move(f));
}

Checkpoint Checkpoint::open(const std::string& dir) {
  Checkpoint ck;
  ck.dir_ = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("checkpoint '", dir, "': not a directory");
  const fs::path root(dir);

  if (is_regular(root / kSafetensorsIndexName)) {
    const std::string index_path = (root / kSafetensorsIndexName).string();
    const nlohmann::json index = read_json_file(index_path);
    const nlohmann::json& map = get_object(index, "weight_map", index_path);
    std::map<std::string, std::vector<std::string>> tensors_of;  // file -> tensors mapped to it
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (!it->is_string())
        fail(index_path, ": weight_map['", it.key(), "'] is ", json_kind(*it), "; expected a shard file name");
      const std::string& file = it->get_ref<const std::string&>();
      if (!is_plain_file_name(file))
        fail(index_path, ": weight_map['", it.key(), "'] = '", file,
             "' is not a plain file name; expected a shard in the same directory");
      tensors_of[file].push_back(it.key());
    }
    for (const auto& [file, names] : tensors_of) {
      const fs::path p = root / file;
      if (!is_regular(p))
        fail(index_path, ": shard '", file, "' (holding tensor '", names.front(), "') does not exist in '", dir, "'");
      auto f = SafetensorsFile::open(p.string());
      for (const std::string& n : names)
        if (!f->find(n))
          fail(index_path, ": weight_map puts tensor '", n, "' in '", file, "' but that file has no such tensor");
      ck.add_file(std::move(f), index_path);
    }
    return ck;
  }

  if (is_regular(root / kSingleName)) {
    ck.add_file(SafetensorsFile::open((root / kSingleName).string()), "checkpoint '" + dir + "'");
    return ck;
  }

  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.path().extension() == ".safetensors" && is_regular(e.path())) files.push_back(e.path().string());
  if (ec) fail("checkpoint '", dir, "': cannot list the directory (", ec.message(), ")");
  if (files.empty())
    fail("checkpoint '", dir, "': no ", kSafetensorsIndexName, ", ", kSingleName, " or *.safetensors file found");
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) ck.add_file(SafetensorsFile::open(f), "checkpoint '" + dir + "'");
  return ck;
}

const TensorInfo* Checkpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const TensorInfo& Checkpoint::require(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (!t) fail("checkpoint '", dir_, "': required tensor '", name, "' is missing");
  return *t;
}

const TensorInfo& Checkpoint::require(std::string_view name, DType dtype) const {
  const TensorInfo& t = require(name);
  if (t.dtype != dtype)
    fail("checkpoint '", dir_, "': tensor '", name, "' (in '", t.file, "') has dtype ", dtype_name(t.dtype),
         "; expected ", dtype_name(dtype));
  return t;
}

const TensorInfo& Checkpoint::require(std::string_view name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = require(name);
  bool ok = t.shape.size() == shape.size();
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] == -1 || shape[i] == t.shape[i];
  if (!ok)
    fail("checkpoint '", dir_, "': tensor '", name, "' (in '", t.file, "') has shape ", shape_to_string(t.shape),
         "; expected ", shape_to_string(shape), " (-1: any size)");
  return t;
}

const TensorInfo& Checkpoint::require(std::string_view name, DType dtype, const std::vector<int64_t>& shape) const {
  require(name, dtype);
  return require(name, shape);
}

void Checkpoint::rename(std::string_view from, const std::string& to) {
  auto it = by_name_.find(from);
  if (it == by_name_.end())
    fail("checkpoint '", dir_, "': cannot rename tensor '", from, "' to '", to,
         "': no such tensor");
  if (by_name_.count(to))
    fail("checkpoint '", dir_, "': holds both '", from, "' and '", to, "', which name the same ",
         "tensor; expected one of them");
  auto view = std::make_unique<TensorInfo>(*it->second);
  view->name = to;
  by_name_.erase(it);
  by_name_.emplace(to, view.get());
  renamed_.push_back(std::move(view));
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(by_name_.size());
  for (const auto& [n, t] : by_name_) out.push_back(n);
  return out;
}

Checkpoint Checkpoint::from_views(const std::string& source, std::vector<TensorInfo> tensors,
                                  std::shared_ptr<const void> keep_alive) {
  Checkpoint ck;
  ck.dir_ = source;
  ck.keep_alive_ = std::move(keep_alive);
  for (TensorInfo& t : tensors) {
    auto view = std::make_unique<TensorInfo>(std::move(t));
    if (!ck.by_name_.emplace(view->name, view.get()).second)
      fail(source, ": tensor '", view->name, "' is given twice; expected each tensor once");
    ck.total_bytes_ += view->nbytes;
    ck.renamed_.push_back(std::move(view));
  }
  return ck;
}

void Checkpoint::release_pages(const TensorInfo& t) const {
  if (keep_alive_) return;  // from_views: not necessarily a file mapping
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(t.data) + page - 1) / page * page;
  const uintptr_t end = (uintptr_t(t.data) + t.nbytes) / page * page;
  if (t.data == nullptr || end <= begin) return;
  madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace moex::io
