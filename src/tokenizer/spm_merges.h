// The merges of a SentencePiece-style vocabulary that comes with token scores instead of a
// merge list (GGUF's tokenizer.ggml.model "llama"): llama.cpp's SPM tokenizer joins the adjacent
// pair whose concatenation is a token with the highest score (leftmost among equal scores).
// Written as BPE merges that is: every split of a token t into two tokens a + b is the merge
// (a, b) -> t, ranked by t's score (equal scores share a rank, so BpeModel's leftmost-on-ties
// rule decides as llama.cpp's does). docs/gguf.md, "SentencePiece tokenizers", argues the
// equivalence; spm_merges_test.cc checks it against a direct score-ordered merge.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/bpe_model.h"

namespace moex::tok {

// At most this many bytes are hashed while looking for the splits of all tokens (a fraction
// of a second; the work is characters x bytes summed over the tokens: 2.2e4 for the 1024-piece
// test vocabulary, an estimated 1e7 for 256k tokens of ~6 characters); a vocabulary of
// absurdly long tokens is refused before that work rather than stalling.
inline constexpr int64_t kMaxSpmSplitWork = int64_t{1} << 28;

// Entries for MergeTable::build. `vocab` maps each token text to its id, `scores[id]` is the
// score of that id. Fails, naming `where`, on a NaN score, on an id without a score, on a
// vocabulary whose splits cost more than kMaxSpmSplitWork, and on a token that llama.cpp could
// reach through a character that is not itself a token (BPE, which turns such characters into
// byte tokens before merging, could not).
std::vector<MergeTable::Entry> merges_from_scores(const StringIdMap& vocab,
                                                  const std::vector<double>& scores,
                                                  const std::string& where);

}  // namespace moex::tok
