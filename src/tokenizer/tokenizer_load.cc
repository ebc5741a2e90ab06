// Tokenizer::load: reads tokenizer.json (+ tokenizer_config.json) and builds the pipeline;
// every malformed or unsupported field is a moex::Error naming it. (generation_config.json's
// end-of-turn ids belong to the model's stop rule: model/generation_config.h.)
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace moex {

namespace fs = std::filesystem;
using tok::Json;

namespace {

// Whether something is at `p` and whether it is a directory. Failures other than "not found"
// (a symlink loop, a directory without search permission) are an Error naming p; they would
// otherwise escape as std::filesystem_error.
enum class PathKind { kMissing, kDirectory, kOther };
PathKind path_kind(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (st.type() == fs::file_type::not_found) return PathKind::kMissing;
  if (ec) fail(p.string(), ": cannot access (", ec.message(), ")");
  return fs::is_directory(st) ? PathKind::kDirectory : PathKind::kOther;
}

// A token named by tokenizer_config.json: "<s>", {"content": "<s>", ...} or null.
std::optional<std::string> config_token(const Json& cfg, const char* key,
                                        const std::string& where) {
  const Json* f = tok::optional_field(cfg, key);
  if (f == nullptr) return std::nullopt;
  const std::string fw = tok::field_path(where, key);
  if (f->is_string()) return f->get<std::string>();
  if (f->is_object()) return tok::string_field(*f, "content", fw);
  fail(fw, ": expected a string, an object with \"content\", or null; got ", f->type_name());
}

int32_t resolve(const Tokenizer& t, const std::string& token, const std::string& where) {
  auto id = t.token_to_id(token);
  if (!id) fail(where, ": token \"", token, "\" is not in the vocabulary");
  return *id;
}

// tokenizer_config.json's bos / eos tokens and add_bos_token / add_eos_token.
void apply_config(const Json& cfg, const std::string& cfg_name, Tokenizer::Impl& im,
                  const Tokenizer& view) {
  const std::string where = cfg_name + ": ";
  tok::require_object(cfg, cfg_name);
  if (auto bos = config_token(cfg, "bos_token", where)) {
    im.bos = resolve(view, *bos, tok::field_path(where, "bos_token"));
  }
  if (auto eos = config_token(cfg, "eos_token", where)) {
    im.eos.push_back(resolve(view, *eos, tok::field_path(where, "eos_token")));
  }
  if (tok::optional_field(cfg, "add_bos_token") || tok::optional_field(cfg, "add_eos_token")) {
    // transformers only honours these by rebuilding a missing post-processor.
    const bool add_bos = tok::bool_field(cfg, "add_bos_token", where, false);
    const bool add_eos = tok::bool_field(cfg, "add_eos_token", where, false);
    if (im.affixes.prefix.empty() && im.affixes.suffix.empty()) {
      if (add_bos && im.bos) im.affixes.prefix.push_back(*im.bos);
      if (add_eos && !im.eos.empty()) im.affixes.suffix.push_back(im.eos[0]);
    }
  }
}

// tokenizer_config.json "added_tokens_decoder" entries missing from tokenizer.json.
void add_config_tokens(const Json& cfg, const std::string& cfg_name, tok::AddedVocab& added) {
  const Json* dec = cfg.is_object() ? tok::optional_field(cfg, "added_tokens_decoder") : nullptr;
  if (dec == nullptr) return;
  const std::string where = cfg_name + ": added_tokens_decoder";
  tok::require_object(*dec, where);
  for (auto it = dec->begin(); it != dec->end(); ++it) {
    const std::string iw = str_cat(where, "[\"", it.key(), "\"]");
    Json j = it.value();
    tok::require_object(j, iw);
    try {
      j["id"] = std::stoll(it.key());
    } catch (const std::exception&) {
      fail(iw, ": the key must be a token id");
    }
    tok::AddedToken t = tok::AddedVocab::parse_token(j, iw);
    if (added.by_id(t.id) == nullptr) added.add(std::move(t));
  }
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& dir_or_file) {
  fs::path file = dir_or_file;
  if (path_kind(file) == PathKind::kDirectory) file /= "tokenizer.json";
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (path_kind(file) == PathKind::kMissing) fail(file.string(), ": tokenizer file not found");
  const Json j = tok::read_json_file(file.string(), tok::kMaxTokenizerJsonBytes,
                                     tok::kTokenizerUniqueKeyDepth);
  const fs::path cfg_path = dir / "tokenizer_config.json";
  std::optional<Json> cfg;
  if (path_kind(cfg_path) != PathKind::kMissing) cfg = tok::read_json_file(cfg_path.string());
  return build(j, file.string(), cfg ? &*cfg : nullptr, cfg_path.string());
}

Tokenizer Tokenizer::from_json(const Json& tokenizer, const Json* config,
                               const std::string& where) {
  return build(tokenizer, where, config, where + " (tokenizer config)");
}

Tokenizer Tokenizer::build(const Json& j, const std::string& name, const Json* cfg,
                           const std::string& cfg_name) {
  const std::string where = name + ": ";
  tok::require_object(j, name);

  auto im = std::make_shared<Tokenizer::Impl>();
  im->path = name;
  im->model = tok::BpeModel::from_json(tok::require_field(j, "model", where),
                                       tok::field_path(where, "model"));
  if (const Json* n = tok::optional_field(j, "normalizer")) {
    im->normalizer = tok::Normalizer::from_json(*n, tok::field_path(where, "normalizer"));
  }
  if (const Json* p = tok::optional_field(j, "pre_tokenizer")) {
    im->pre_tokenizer = tok::PreTokenizer::from_json(*p, tok::field_path(where, "pre_tokenizer"));
    im->map_bytes = im->pre_tokenizer->model_maps_bytes();
  }
  if (const Json* d = tok::optional_field(j, "decoder")) {
    im->decoder = tok::Decoder::from_json(*d, tok::field_path(where, "decoder"));
  }
  if (const Json* a = tok::optional_field(j, "added_tokens")) {
    const std::string aw = tok::field_path(where, "added_tokens");
    if (!a->is_array()) fail(aw, ": expected an array, got ", a->type_name());
    // Ids as the reference assigns them: a token in the model vocabulary keeps the model's
    // id; any other takes the next id after the model vocabulary / previous added tokens
    // (the file's id is only a hint; real files agree with this).
    const int32_t model_count = static_cast<int32_t>(im->model->vocab_size());
    int32_t max_added = -1;
    for (size_t i = 0; i < a->size(); ++i) {
      tok::AddedToken t = tok::AddedVocab::parse_token((*a)[i], tok::index_path(aw, i));
      if (auto mid = im->model->token_to_id(t.content)) {
        t.id = *mid;
      } else if (const tok::AddedToken* prev = im->added.by_content(t.content)) {
        t.id = prev->id;
      } else {
        t.id = (max_added < 0) ? model_count
               : (max_added >= model_count || model_count == 0) ? max_added + 1 : model_count;
      }
      max_added = std::max(max_added, t.id);
      im->added.add(std::move(t));
    }
  }
  if (cfg) add_config_tokens(*cfg, cfg_name, im->added);
  const tok::Normalizer* norm = im->normalizer.get();
  im->added.finalize([norm](const std::string& s) {
    std::string t = s;
    if (norm) norm->normalize(t);
    return t;
  });
  const Json* pp = tok::optional_field(j, "post_processor");
  im->affixes = tok::parse_post_processor(pp ? *pp : Json(), tok::field_path(where, "post_processor"));

  int32_t max_id = im->model->max_id();
  for (const tok::AddedToken& t : im->added.tokens()) max_id = std::max(max_id, t.id);
  im->vocab_size = max_id + 1;
  for (int32_t id : im->affixes.prefix) {
    if (id < 0 || id > max_id) fail(where, "post_processor: special id ", id, " out of range");
  }
  for (int32_t id : im->affixes.suffix) {
    if (id < 0 || id > max_id) fail(where, "post_processor: special id ", id, " out of range");
  }

  if (im->decoder && im->decoder->is_plain_byte_level()) {
    im->id_bytes.resize(static_cast<size_t>(im->vocab_size));
    for (int32_t id = 0; id <= max_id; ++id) {
      const std::string* t = im->token_of(id);
      if (t == nullptr) continue;
      if (!tok::byte_level_decode(*t, im->id_bytes[id])) im->id_bytes[id] = *t;
    }
  }
  Tokenizer view(im);
  if (cfg) apply_config(*cfg, cfg_name, *im, view);
  return view;
}

}  // namespace moex
