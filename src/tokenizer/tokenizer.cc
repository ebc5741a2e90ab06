// moex::Tokenizer encode / decode and StreamDecoder (loading is in tokenizer_load.cc).
#include "tokenizer/tokenizer.h"

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace moex {

using tok::Segment;

void Tokenizer::Impl::encode_plain(std::string piece, bool at_start,
                                   std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (!pre_tokenizer) {
    model->encode_word(piece, false, out);
    return;
  }
  tok::Words w;
  w.buf = std::move(piece);
  w.spans.push_back({0, w.buf.size(), at_start});
  pre_tokenizer->apply(w);
  const std::string_view buf(w.buf);
  for (const tok::WordSpan& s : w.spans) {
    model->encode_word(buf.substr(s.begin, s.end - s.begin), map_bytes, out);
  }
}

const std::string* Tokenizer::Impl::token_of(int32_t id) const {
  if (const tok::AddedToken* a = added.by_id(id)) return &a->content;
  return model->id_to_token(id);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Impl& im = *impl_;
  std::string repaired;
  if (!tok::is_valid_utf8(text)) {
    repaired = tok::utf8_lossy(text);
    text = repaired;
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 8);
  if (add_special) out.insert(out.end(), im.affixes.prefix.begin(), im.affixes.prefix.end());
  std::vector<Segment> segs, subs;
  im.added.split(text, false, segs, parse_special);
  for (const Segment& seg : segs) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
      continue;
    }
    std::string piece(text.substr(seg.begin, seg.end - seg.begin));
    if (im.normalizer) im.normalizer->normalize(piece);
    const bool at_start = seg.begin == 0;
    if (!im.added.has_normalized(parse_special)) {
      im.encode_plain(std::move(piece), at_start, out);
      continue;
    }
    subs.clear();
    im.added.split(piece, true, subs, parse_special);
    for (const Segment& sub : subs) {
      if (sub.id >= 0) {
        out.push_back(sub.id);
      } else {
        im.encode_plain(piece.substr(sub.begin, sub.end - sub.begin), at_start && sub.begin == 0,
                        out);
      }
    }
  }
  if (add_special) out.insert(out.end(), im.affixes.suffix.begin(), im.affixes.suffix.end());
  return out;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  const Impl& im = *impl_;
  if (!im.id_bytes.empty())
    return id >= 0 && static_cast<size_t>(id) < im.id_bytes.size() ? im.id_bytes[id] : "";
  const std::string* t = im.token_of(id);
  if (t == nullptr) return "";
  auto hex = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  if (t->size() == 6 && t->compare(0, 3, "<0x") == 0 && (*t)[5] == '>' && hex((*t)[3]) >= 0 &&
      hex((*t)[4]) >= 0)
    return std::string(1, char(hex((*t)[3]) * 16 + hex((*t)[4])));
  return decode({id});
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool skip_special) const {
  const Impl& im = *impl_;
  auto skipped = [&](int32_t id) {
    if (!skip_special) return false;
    const tok::AddedToken* a = im.added.by_id(id);
    return a != nullptr && a->special;
  };
  if (!im.id_bytes.empty()) {
    std::string bytes;
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= im.id_bytes.size() || skipped(id)) continue;
      bytes += im.id_bytes[id];
    }
    return tok::utf8_lossy(bytes);
  }
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string* t = im.token_of(id);
    if (t == nullptr || skipped(id)) continue;
    tokens.push_back(*t);
  }
  if (im.decoder) return im.decoder->decode(std::move(tokens));
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ' ';
    out += tokens[i];
  }
  return out;
}

std::vector<int32_t> Tokenizer::eos_ids() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
int32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }
const std::string& Tokenizer::path() const { return impl_->path; }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const tok::AddedToken* a = impl_->added.by_content(token)) return a->id;
  return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  const std::string* t = impl_->token_of(id);
  if (t == nullptr) return std::nullopt;
  return *t;
}

bool Tokenizer::is_special(int32_t id) const {
  const tok::AddedToken* a = impl_->added.by_id(id);
  return a != nullptr && a->special;
}

StreamDecoder::StreamDecoder(Tokenizer tokenizer, bool skip_special)
    : tok_(std::move(tokenizer)), skip_special_(skip_special) {}

void StreamDecoder::prime(const std::vector<int32_t>& context) {
  ids_ = context;
  prefix_len_ = context.size();
  prefix_text_ = tok_.decode(ids_, skip_special_);
}

std::string StreamDecoder::step(int32_t id) {
  ids_.push_back(id);
  std::string text = tok_.decode(ids_, skip_special_);
  const bool grew = text.size() > prefix_text_.size();
  const bool incomplete = text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
  if (!grew || incomplete) return std::string();
  std::string fresh;
  if (text.compare(0, prefix_text_.size(), prefix_text_) == 0) {
    fresh = text.substr(prefix_text_.size());
  } else {
    // A later byte token turned an emitted byte run invalid (with ByteFallback the whole run
    // then decodes as U+FFFD): text already emitted is neither retracted nor repeated; what
    // follows the common part, from a character boundary, is new.
    size_t common = 0;
    while (common < text.size() && common < prefix_text_.size() &&
           text[common] == prefix_text_[common])
      ++common;
    while (common > 0 && (static_cast<unsigned char>(text[common]) & 0xC0) == 0x80) --common;
    fresh = text.substr(common);
  }
  // Keep the ids after the old prefix as the next window; its first ones are context.
  const size_t new_prefix_len = ids_.size() - prefix_len_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<ptrdiff_t>(prefix_len_));
  prefix_text_ = tok_.decode(ids_, skip_special_);
  prefix_len_ = new_prefix_len;
  return fresh;
}

std::string StreamDecoder::flush() {
  std::string text = tok_.decode(ids_, skip_special_);
  std::string rest;
  if (text.size() > prefix_text_.size() && text.compare(0, prefix_text_.size(), prefix_text_) == 0) {
    rest = text.substr(prefix_text_.size());
  }
  ids_.clear();
  prefix_len_ = 0;
  prefix_text_.clear();
  return rest;
}

}  // namespace moex
