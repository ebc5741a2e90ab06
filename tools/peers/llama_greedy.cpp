// moex-llama-greedy: loads a GGUF with libllama, feeds prompt token ids, decodes greedily and
// prints the ids and the top logits of every step as JSON (the llama.cpp side of gguf_twin_test).
//
//   moex-llama-greedy MODEL.gguf 1,2,3 N_TOKENS [THREADS [FORCED_IDS|- [LOGITS.f32]]]
//
// FORCED_IDS (comma list) are fed after each step instead of the argmax, so the logits of every
// step can be compared with another engine's on the same sequence; LOGITS.f32 receives them.
//
//   moex-llama-greedy --tokenize MODEL.gguf TEXT_FILE
//
// prints {"ids":[...], "ids_no_parse_special":[...], "ids_no_bos":[...], "detokenized_hex":"..."}:
// llama_tokenize of the file's bytes with special tokens added and parsed, added but not parsed,
// parsed but not added, and llama_detokenize of the last (special tokens written out) as hex
// (the vocabulary only; for the GGUF tokenizer comparison of src/model/gguf/gguf_model_test.py).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "llama.h"

namespace {

std::vector<llama_token> parse_ids(const std::string& text) {
  std::vector<llama_token> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 0) {
      std::fprintf(stderr, "moex-llama-greedy: bad token id '%s' in '%s'\n", item.c_str(),
                   text.c_str());
      std::exit(2);
    }
    ids.push_back(static_cast<llama_token>(value));
    start = comma + 1;
  }
  return ids;
}

// The step's argmax (lowest id on ties, as moex picks) and its top-5 logits as a JSON array.
llama_token argmax_and_top(const float* logits, int n_vocab, std::string* top_json) {
  std::vector<int> order(n_vocab);
  for (int i = 0; i < n_vocab; ++i) order[i] = i;
  const int k = std::min(5, n_vocab);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  *top_json = "[";
  for (int i = 0; i < k; ++i) {
    char item[64];
    std::snprintf(item, sizeof item, "%s[%d,%.6g]", i ? "," : "", order[i], logits[order[i]]);
    *top_json += item;
  }
  *top_json += "]";
  return order[0];
}

}  // namespace

// --tokenize MODEL TEXT_FILE: the ids llama.cpp gives the file's bytes.
int tokenize_file(const char* model_path, const char* text_path) {
  std::string text;
  if (FILE* in = std::fopen(text_path, "rb")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, in)) > 0) text.append(buf, n);
    std::fclose(in);
  } else {
    std::fprintf(stderr, "moex-llama-greedy: cannot read %s\n", text_path);
    return 2;
  }
  llama_backend_init();
  llama_model_params mparams = llama_model_default_params();
  mparams.n_gpu_layers = 0;
  mparams.vocab_only = true;
  llama_model* model = llama_model_load_from_file(model_path, mparams);
  if (model == nullptr) {
    std::fprintf(stderr, "moex-llama-greedy: cannot load %s\n", model_path);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const auto tokenize = [&](bool add_special, bool parse_special) {
    std::vector<llama_token> ids(text.size() + 8);
    int n = llama_tokenize(vocab, text.data(), int32_t(text.size()), ids.data(),
                           int32_t(ids.size()), add_special, parse_special);
    if (n < 0) {
      ids.resize(size_t(-n));
      n = llama_tokenize(vocab, text.data(), int32_t(text.size()), ids.data(),
                         int32_t(ids.size()), add_special, parse_special);
    }
    ids.resize(size_t(std::max(n, 0)));
    return ids;
  };
  const auto list = [](const std::vector<llama_token>& ids) {
    std::string out = "[";
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    return out + "]";
  };
  const std::vector<llama_token> plain = tokenize(false, true);
  std::vector<char> buf(plain.size() * 16 + 64);
  int len = -1;
  for (int attempt = 0; attempt < 2 && len < 0; ++attempt) {
    if (attempt) buf.resize(size_t(-len));
    len = llama_detokenize(vocab, plain.data(), int32_t(plain.size()), buf.data(),
                           int32_t(buf.size()), /*remove_special=*/false,
                           /*unparse_special=*/true);
  }
  std::string hex;
  for (int i = 0; i < std::max(len, 0); ++i) {
    char h[3];
    std::snprintf(h, sizeof h, "%02x", unsigned(static_cast<unsigned char>(buf[size_t(i)])));
    hex += h;
  }
  std::printf("{\"ids\":%s,\"ids_no_parse_special\":%s,\"ids_no_bos\":%s,"
              "\"detokenized_hex\":\"%s\"}\n",
              list(tokenize(true, true)).c_str(), list(tokenize(true, false)).c_str(),
              list(plain).c_str(), hex.c_str());
  llama_model_free(model);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--tokenize") return tokenize_file(argv[2], argv[3]);
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf IDS N_TOKENS [THREADS [FORCED|- [LOGITS]]]\n",
                 argv[0]);
    return 2;
  }
  const std::vector<llama_token> prompt = parse_ids(argv[2]);
  const int n_new = std::atoi(argv[3]);
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  std::vector<llama_token> forced;
  if (argc > 5 && std::string(argv[5]) != "-") forced = parse_ids(argv[5]);
  FILE* dump = nullptr;
  if (argc > 6 && (dump = std::fopen(argv[6], "wb")) == nullptr) {
    std::fprintf(stderr, "moex-llama-greedy: cannot write %s\n", argv[6]);
    return 2;
  }

  llama_backend_init();
  llama_model_params mparams = llama_model_default_params();
  mparams.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mparams);
  if (model == nullptr) {
    std::fprintf(stderr, "moex-llama-greedy: cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params cparams = llama_context_default_params();
  cparams.n_ctx = static_cast<uint32_t>(prompt.size() + n_new + 8);
  cparams.n_batch = cparams.n_ctx;
  cparams.n_threads = threads;
  cparams.n_threads_batch = threads;
  llama_context* ctx = llama_init_from_model(model, cparams);
  if (ctx == nullptr) {
    std::fprintf(stderr, "moex-llama-greedy: cannot create a context\n");
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

  std::vector<llama_token> step = prompt;
  std::string ids_json, tops_json;
  for (int i = 0; i < n_new; ++i) {
    llama_batch batch = llama_batch_get_one(step.data(), static_cast<int32_t>(step.size()));
    if (llama_decode(ctx, batch) != 0) {
      std::fprintf(stderr, "moex-llama-greedy: llama_decode failed at step %d\n", i);
      return 1;
    }
    std::string top;
    const float* logits = llama_get_logits_ith(ctx, -1);
    if (dump) std::fwrite(logits, sizeof(float), size_t(n_vocab), dump);
    const llama_token next = argmax_and_top(logits, n_vocab, &top);
    ids_json += (i ? "," : "") + std::to_string(next);
    tops_json += (i ? "," : "") + top;
    step.assign(1, size_t(i) < forced.size() ? forced[i] : next);
  }
  if (dump) std::fclose(dump);
  std::printf("{\"n_vocab\":%d,\"tokens\":[%s],\"top_logits\":[%s]}\n", n_vocab,
              ids_json.c_str(), tops_json.c_str());
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
