// GQA attention against a double-precision reference; causality; prefill == decode.
#include "backend/cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>

#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "backend/cpu/test_util.h"

namespace moex::ops {
namespace {
using namespace optest;

struct Case {
  int64_t heads, kv_heads, hd, len;
};

// out for query row at absolute position p (attends first..p), head h; with a sink logit the
// softmax denominator has one more term exp(sink).
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, const Case& c, int64_t p, int64_t h,
                              double scale, int64_t first = 0, const float* sink = nullptr) {
  const int64_t kvh = h / (c.heads / c.kv_heads);
  std::vector<double> s(static_cast<size_t>(p + 1), 0.0), out(size_t(c.hd), 0.0);
  double m = sink ? double(*sink) : -1e300;
  for (int64_t t = first; t <= p; ++t) {
    double d = 0;
    for (int64_t i = 0; i < c.hd; ++i) d += double(q[i]) * k[(t * c.kv_heads + kvh) * c.hd + i];
    s[t] = d * scale;
    m = std::max(m, s[t]);
  }
  double z = sink ? std::exp(double(*sink) - m) : 0.0;
  for (int64_t t = first; t <= p; ++t) z += (s[t] = std::exp(s[t] - m));
  for (int64_t t = first; t <= p; ++t)
    for (int64_t i = 0; i < c.hd; ++i) out[i] += s[t] / z * v[(t * c.kv_heads + kvh) * c.hd + i];
  return out;
}

TEST(Attention, PrefillMatchesReferenceForGqaShapes) {
  // {12, 2}: groups of 6 heads, computed as blocks of 4 and 2.
  for (Case c : {Case{4, 4, 16, 9}, Case{8, 2, 32, 17}, Case{6, 1, 8, 5}, Case{12, 2, 16, 7}}) {
    KvCache cache(c.kv_heads, c.hd, c.len + 3);
    auto k = random_vec(c.len * c.kv_heads * c.hd, 20);
    auto v = random_vec(c.len * c.kv_heads * c.hd, 21);
    auto q = random_vec(c.len * c.heads * c.hd, 22, -2.f, 2.f);
    cache.append(k.data(), v.data(), c.len);
    std::vector<float> out(q.size());
    const float scale = 1.f / std::sqrt(float(c.hd));
    attention({.q = q.data(), .cache = &cache, .rows = c.len, .pos0 = 0, .heads = c.heads,
               .scale = scale, .out = out.data()});
    for (int64_t r = 0; r < c.len; ++r)
      for (int64_t h = 0; h < c.heads; ++h) {
        std::vector<float> qr(q.begin() + (r * c.heads + h) * c.hd,
                              q.begin() + (r * c.heads + h + 1) * c.hd);
        auto ref = reference(qr, k, v, c, r, h, scale);
        // Values are convex combinations of |v| <= 1: absolute error ~ (len + hd) eps.
        EXPECT_LT(max_abs_diff(out.data() + (r * c.heads + h) * c.hd, ref.data(), c.hd),
                  (c.len + c.hd) * kEps * 8);
      }
  }
}

TEST(Attention, DecodeRowEqualsPrefillRowAndIgnoresTheFuture) {
  const Case c{4, 2, 16, 12};
  auto k = random_vec(c.len * c.kv_heads * c.hd, 30);
  auto v = random_vec(c.len * c.kv_heads * c.hd, 31);
  auto q = random_vec(c.len * c.heads * c.hd, 32);
  KvCache full(c.kv_heads, c.hd, c.len);
  full.append(k.data(), v.data(), c.len);
  std::vector<float> pre(q.size());
  attention({.q = q.data(), .cache = &full, .rows = c.len, .pos0 = 0, .heads = c.heads,
             .scale = 0.25f, .out = pre.data()});
  // Decode one token at a time into a fresh cache.
  KvCache inc(c.kv_heads, c.hd, c.len);
  const int64_t kvrow = c.kv_heads * c.hd, qrow = c.heads * c.hd;
  for (int64_t p = 0; p < c.len; ++p) {
    inc.append(k.data() + p * kvrow, v.data() + p * kvrow, 1);
    std::vector<float> o(qrow);
    attention({.q = q.data() + p * qrow, .cache = &inc, .rows = 1, .pos0 = p, .heads = c.heads,
               .scale = 0.25f, .out = o.data()});
    for (int64_t i = 0; i < qrow; ++i) EXPECT_EQ(o[i], pre[p * qrow + i]) << "pos " << p;
  }
}

TEST(Attention, ChunkedRowsSeeOnlyTheirChunk) {
  // With chunk 4, the row at position 6 must equal plain causal attention over keys 4..6.
  const Case c{2, 1, 8, 7};
  auto k = random_vec(c.len * c.hd, 33), v = random_vec(c.len * c.hd, 34);
  auto q = random_vec(c.len * c.heads * c.hd, 35);
  KvCache all(1, c.hd, c.len), tail(1, c.hd, 3);
  all.append(k.data(), v.data(), c.len);
  tail.append(k.data() + 4 * c.hd, v.data() + 4 * c.hd, 3);
  std::vector<float> chunked(q.size()), plain(size_t(c.heads * c.hd));
  attention({.q = q.data(), .cache = &all, .rows = c.len, .pos0 = 0, .heads = c.heads,
             .scale = 0.3f, .out = chunked.data(), .chunk = 4});
  attention({.q = q.data() + 6 * c.heads * c.hd, .cache = &tail, .rows = 1, .pos0 = 2,
             .heads = c.heads, .scale = 0.3f, .out = plain.data()});
  for (int64_t i = 0; i < c.heads * c.hd; ++i) EXPECT_EQ(chunked[6 * c.heads * c.hd + i], plain[i]);
  // Position 3 is the last of chunk 0: all of keys 0..3, same as unchunked.
  std::vector<float> causal(q.size());
  attention({.q = q.data(), .cache = &all, .rows = c.len, .pos0 = 0, .heads = c.heads,
             .scale = 0.3f, .out = causal.data()});
  for (int64_t i = 0; i < 4 * c.heads * c.hd; ++i) EXPECT_EQ(chunked[i], causal[i]);
}

// gpt-oss: a sliding window of 5 and one sink logit per head (some large enough to take most
// of the mass, one -inf that takes none) against the double reference, prefill and decode.
TEST(Attention, SlidingWindowAndSinksMatchTheReference) {
  const Case c{8, 2, 16, 13};
  const int64_t window = 5;
  auto k = random_vec(c.len * c.kv_heads * c.hd, 50);
  auto v = random_vec(c.len * c.kv_heads * c.hd, 51);
  auto q = random_vec(c.len * c.heads * c.hd, 52, -2.f, 2.f);
  const std::vector<float> sinks = {0.5f, -1.f, 3.f, 0.f, -INFINITY, 1.5f, -0.25f, 2.f};
  KvCache cache(c.kv_heads, c.hd, c.len);
  cache.append(k.data(), v.data(), c.len);
  const float scale = 0.25f;
  for (bool with_sinks : {false, true})
    for (int64_t win : {int64_t{0}, window}) {
      std::vector<float> out(q.size());
      attention({.q = q.data(), .cache = &cache, .rows = c.len, .pos0 = 0, .heads = c.heads,
                 .scale = scale, .out = out.data(), .window = win,
                 .sinks = with_sinks ? sinks.data() : nullptr});
      KvCache inc(c.kv_heads, c.hd, c.len);
      const int64_t kvrow = c.kv_heads * c.hd, qrow = c.heads * c.hd;
      for (int64_t r = 0; r < c.len; ++r) {
        for (int64_t h = 0; h < c.heads; ++h) {
          std::vector<float> qr(q.begin() + (r * c.heads + h) * c.hd,
                                q.begin() + (r * c.heads + h + 1) * c.hd);
          const int64_t first = win > 0 ? std::max<int64_t>(0, r - win + 1) : 0;
          auto ref = reference(qr, k, v, c, r, h, scale, first,
                               with_sinks ? &sinks[size_t(h)] : nullptr);
          EXPECT_LT(max_abs_diff(out.data() + (r * c.heads + h) * c.hd, ref.data(), c.hd),
                    (c.len + c.hd) * kEps * 8)
              << "row " << r << " head " << h << " window " << win << " sinks " << with_sinks;
        }
        // Decoding the same row alone gives the same bits.
        inc.append(k.data() + r * kvrow, v.data() + r * kvrow, 1);
        std::vector<float> o(static_cast<size_t>(qrow));
        attention({.q = q.data() + r * qrow, .cache = &inc, .rows = 1, .pos0 = r,
                   .heads = c.heads, .scale = scale, .out = o.data(), .window = win,
                   .sinks = with_sinks ? sinks.data() : nullptr});
        EXPECT_EQ(0, std::memcmp(o.data(), out.data() + r * qrow, size_t(qrow) * 4)) << "row " << r;
      }
    }
  // A sink takes mass: the output of a head with a huge sink is near zero.
  const std::vector<float> huge(size_t(c.heads), 60.f);
  std::vector<float> out(q.size());
  attention({.q = q.data(), .cache = &cache, .rows = c.len, .pos0 = 0, .heads = c.heads,
             .scale = scale, .out = out.data(), .sinks = huge.data()});
  for (float x : out) EXPECT_LT(std::fabs(x), 1e-12f);
}

// A prefill that continues a sequence (pos0 > 0) over a row count that is not a multiple of
// the row tile, large enough to be split between threads, equals decoding its rows one at a
// time bit for bit: plain causal, chunked (tiles whose rows start in different chunks) and
// windowed (tiles whose rows see different first keys).
TEST(Attention, LongPrefillAfterAPrefixEqualsDecodeWithChunksAndWindows) {
  const int saved = num_threads();
  set_num_threads(2);
  const Case c{8, 2, 64, 203};
  const int64_t prefix = 37, rows = c.len - prefix;
  auto k = random_vec(c.len * c.kv_heads * c.hd, 60);
  auto v = random_vec(c.len * c.kv_heads * c.hd, 61);
  auto q = random_vec(c.len * c.heads * c.hd, 62, -2.f, 2.f);
  const int64_t kvrow = c.kv_heads * c.hd, qrow = c.heads * c.hd;
  for (auto [chunk, window] : {std::pair<int64_t, int64_t>{0, 0}, {50, 0}, {0, 29}}) {
    KvCache cache(c.kv_heads, c.hd, c.len);
    cache.append(k.data(), v.data(), c.len);
    std::vector<float> pre(size_t(rows * qrow));
    attention({.q = q.data() + prefix * qrow, .cache = &cache, .rows = rows, .pos0 = prefix,
               .heads = c.heads, .scale = 0.125f, .out = pre.data(), .chunk = chunk,
               .window = window});
    KvCache inc(c.kv_heads, c.hd, c.len);
    inc.append(k.data(), v.data(), prefix);
    for (int64_t r = 0; r < rows; ++r) {
      inc.append(k.data() + (prefix + r) * kvrow, v.data() + (prefix + r) * kvrow, 1);
      std::vector<float> o(static_cast<size_t>(qrow));
      attention({.q = q.data() + (prefix + r) * qrow, .cache = &inc, .rows = 1,
                 .pos0 = prefix + r, .heads = c.heads, .scale = 0.125f, .out = o.data(),
                 .chunk = chunk, .window = window});
      ASSERT_EQ(0, std::memcmp(o.data(), pre.data() + r * qrow, size_t(qrow) * 4))
          << "row " << r << " chunk " << chunk << " window " << window;
    }
    // And the reference, for a few rows of each tile position.
    for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{77}, rows - 1})
      for (int64_t h : {int64_t{0}, int64_t{5}}) {
        const int64_t p = prefix + r;
        int64_t first = chunk > 0 ? p - p % chunk : 0;
        if (window > 0) first = std::max(first, p - window + 1);
        std::vector<float> qr(q.begin() + (p * c.heads + h) * c.hd,
                              q.begin() + (p * c.heads + h + 1) * c.hd);
        auto ref = reference(qr, k, v, c, p, h, 0.125, first);
        EXPECT_LT(max_abs_diff(pre.data() + (r * c.heads + h) * c.hd, ref.data(), c.hd),
                  (c.len + c.hd) * kEps * 8)
            << "row " << r << " head " << h << " chunk " << chunk << " window " << window;
      }
  }
  set_num_threads(saved);
}

// Work units are (kv head, block of its query heads, tile of rows), the blocks smaller when
// threads outnumber units: a head's values must not depend on how many threads share them.
TEST(Attention, SameBitsAtEveryThreadCount) {
  const int saved = num_threads();
  const Case c{12, 2, 16, 40};
  KvCache cache(c.kv_heads, c.hd, c.len);
  auto k = random_vec(c.len * c.kv_heads * c.hd, 40);
  auto v = random_vec(c.len * c.kv_heads * c.hd, 41);
  auto q = random_vec(c.len * c.heads * c.hd, 42, -2.f, 2.f);
  cache.append(k.data(), v.data(), c.len);
  std::vector<std::vector<float>> outs, last_rows;
  const int64_t qrow = c.heads * c.hd;
  for (int threads : {1, 2, 3, 8}) {
    set_num_threads(threads);
    std::vector<float> out(q.size());
    attention({.q = q.data(), .cache = &cache, .rows = c.len, .pos0 = 0, .heads = c.heads,
               .scale = 0.25f, .out = out.data()});
    outs.push_back(out);
    // The last row alone (decode): a kv head's 6 heads split into smaller blocks when the
    // threads outnumber the kv heads.
    std::vector<float> last(static_cast<size_t>(qrow));
    attention({.q = q.data() + (c.len - 1) * qrow, .cache = &cache, .rows = 1,
               .pos0 = c.len - 1, .heads = c.heads, .scale = 0.25f, .out = last.data()});
    last_rows.push_back(last);
  }
  set_num_threads(saved);
  for (size_t i = 1; i < outs.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(outs[i].data(), outs[0].data(), outs[0].size() * 4)) << i;
    EXPECT_EQ(0, std::memcmp(last_rows[i].data(), last_rows[0].data(), size_t(qrow) * 4)) << i;
  }
  EXPECT_EQ(0, std::memcmp(last_rows[0].data(), outs[0].data() + (c.len - 1) * qrow,
                           size_t(qrow) * 4));
}

TEST(KvCache, OverflowIsAnError) {
  KvCache c(1, 4, 2);
  std::vector<float> kv(12, 1.f);
  c.append(kv.data(), kv.data(), 2);
  EXPECT_THROW(c.append(kv.data(), kv.data(), 1), Error);
  c.truncate(1);
  EXPECT_EQ(c.length(), 1);
  c.append(kv.data(), kv.data(), 1);
  EXPECT_EQ(c.length(), 2);
}

// An F16 cache holds each appended value rounded to f16 and the op reads it back exactly: its
// outputs equal, bit for bit, those over an F32 cache given the rounded values, for prefill and
// decode rows, GQA groups, chunks, windows and sinks, on 2 threads; and decode equals prefill
// over the F16 cache too.
TEST(Attention, F16CacheEqualsF32CacheOfTheRoundedValues) {
  const int saved = num_threads();
  set_num_threads(2);
  const Case c{8, 2, 64, 90};
  auto k = random_vec(c.len * c.kv_heads * c.hd, 70, -3.f, 3.f);
  auto v = random_vec(c.len * c.kv_heads * c.hd, 71, -3.f, 3.f);
  auto q = random_vec(c.len * c.heads * c.hd, 72, -2.f, 2.f);
  std::vector<float> k16(k.size()), v16(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k16[i] = f16_to_f32(KvCache::to_f16(k[i]));
    v16[i] = f16_to_f32(KvCache::to_f16(v[i]));
  }
  ASSERT_NE(0, std::memcmp(k16.data(), k.data(), k.size() * 4));  // rounding did something
  const std::vector<float> sinks(size_t(c.heads), 0.5f);
  const int64_t qrow = c.heads * c.hd, kvrow = c.kv_heads * c.hd;
  for (auto [chunk, window, sink] : {std::tuple<int64_t, int64_t, bool>{0, 0, false},
                                     {32, 0, false}, {0, 17, true}}) {
    KvCache half(c.kv_heads, c.hd, c.len, true, DType::F16), full(c.kv_heads, c.hd, c.len);
    EXPECT_EQ(half.bytes() * 2, full.bytes());
    half.append(k.data(), v.data(), c.len);
    full.append(k16.data(), v16.data(), c.len);
    std::vector<float> got(q.size()), want(q.size());
    AttentionArgs a{.q = q.data(), .cache = &half, .rows = c.len, .pos0 = 0, .heads = c.heads,
                    .scale = 0.125f, .out = got.data(), .chunk = chunk, .window = window,
                    .sinks = sink ? sinks.data() : nullptr};
    attention(a);
    a.cache = &full;
    a.out = want.data();
    attention(a);
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4))
        << "chunk " << chunk << " window " << window;
    KvCache inc(c.kv_heads, c.hd, c.len, true, DType::F16);
    for (int64_t r = 0; r < c.len; ++r) {
      inc.append(k.data() + r * kvrow, v.data() + r * kvrow, 1);
      std::vector<float> o(static_cast<size_t>(qrow));
      AttentionArgs d = a;
      d.q = q.data() + r * qrow;
      d.cache = &inc;
      d.rows = 1;
      d.pos0 = r;
      d.out = o.data();
      attention(d);
      ASSERT_EQ(0, std::memcmp(o.data(), got.data() + r * qrow, size_t(qrow) * 4)) << "row " << r;
    }
  }
  set_num_threads(saved);
}

// What an F16 cache holds: round to nearest even, saturating at +-65504 instead of overflowing
// to infinity, a NaN kept.
TEST(KvCache, F16RoundsAndSaturates) {
  EXPECT_EQ(f16_to_f32(KvCache::to_f16(1.f + 1.f / 4096)), 1.f);  // half an ulp: to even
  EXPECT_EQ(f16_to_f32(KvCache::to_f16(1.f + 3.f / 4096)), 1.f + 4.f / 4096);
  EXPECT_EQ(f16_to_f32(KvCache::to_f16(1e6f)), 65504.f);
  EXPECT_EQ(f16_to_f32(KvCache::to_f16(-7e4f)), -65504.f);
  EXPECT_TRUE(std::isnan(f16_to_f32(KvCache::to_f16(std::nanf("")))));
  EXPECT_THROW(KvCache(1, 4, 2, true, DType::BF16), Error);
}

}  // namespace
}  // namespace moex::ops
