// Host tests of nn_cuda_index.h, the index arithmetic and per-element bodies the nn family's CUDA
// kernels run: exhaustive checks of the window helpers against brute force, and the pooling,
// embedding-gradient and dropout bodies against the CPU kernels, bit for bit. They run without a GPU.
#include "nn/nn_cuda_index.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "testing/program_runner.h"
#include "testing/op_tester.h"

namespace paddlec::testing {
namespace {

using ops::nn::IndexSpan;
using ops::nn::PoolAxis;
using ops::nn::PoolShape;

TEST_CASE("FloorDiv rounds toward minus infinity") {
  for (int64_t a = -50; a <= 50; ++a)
    for (int64_t d = 1; d <= 7; ++d) {
      CAPTURE(a);
      CAPTURE(d);
      CHECK(ops::nn::FloorDiv(a, d) == static_cast<int64_t>(std::floor(static_cast<double>(a) / d)));
    }
}

/// Output size of a sliding axis as pool.cc computes it (-2: the window does not fit).
int64_t SlidingOut(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pa, bool ceil_mode) {
  return WindowOutputSize(in, k, pb, pa, s, 1, ceil_mode);
}

/// Checks PoolCovering(i) against the brute-force set {o : i in PoolWindow(o)} for every input index.
void CheckCovering(const PoolAxis& a, bool adaptive) {
  for (int64_t i = 0; i < a.in; ++i) {
    std::vector<int64_t> covering;
    for (int64_t o = 0; o < a.out; ++o) {
      IndexSpan w = ops::nn::PoolWindow(a, o, adaptive);
      if (w.begin <= i && i < w.end) covering.push_back(o);
    }
    IndexSpan c = ops::nn::PoolCovering(a, i, adaptive);
    std::vector<int64_t> got;
    for (int64_t o = c.begin; o < c.end; ++o) got.push_back(o);
    CAPTURE(i);
    CHECK(got == covering);
  }
}

TEST_CASE("PoolCovering is exactly the set of outputs whose window holds an input index") {
  for (int64_t in = 1; in <= 13; ++in)
    for (int64_t k = 1; k <= 5; ++k)
      for (int64_t s = 1; s <= 4; ++s)
        for (int64_t pb = 0; pb <= 4; ++pb)
          for (int64_t pa : {pb, pb + 1, int64_t{0}})
            for (bool ceil_mode : {false, true}) {
              int64_t out = SlidingOut(in, k, s, pb, pa, ceil_mode);
              if (out < 1) continue;
              CAPTURE(in);
              CAPTURE(k);
              CAPTURE(s);
              CAPTURE(pb);
              CAPTURE(pa);
              CAPTURE(ceil_mode);
              CheckCovering(PoolAxis{in, out, k, s, pb}, false);
            }
  // Adaptive: shrinking, equal and growing outputs.
  for (int64_t in = 1; in <= 17; ++in)
    for (int64_t out = 1; out <= 17; ++out) {
      CAPTURE(in);
      CAPTURE(out);
      CheckCovering(PoolAxis{in, out, out, 1, 0}, true);
    }
}

TEST_CASE("PoolAxisFitsCudnn accepts exactly the axes cuDNN pools as pool.cc does") {
  int accepted = 0;
  for (int64_t in = 1; in <= 12; ++in)
    for (int64_t k = 1; k <= 5; ++k)
      for (int64_t s = 1; s <= 4; ++s)
        for (int64_t pb = 0; pb <= 5; ++pb)
          for (int64_t pa : {pb, pb + 1})
            for (bool ceil_mode : {false, true}) {
              int64_t out = SlidingOut(in, k, s, pb, pa, ceil_mode);
              if (out < 1) continue;
              PoolAxis a{in, out, k, s, pb};
              bool fits = ops::nn::PoolAxisFitsCudnn(a, pa);
              CAPTURE(in);
              CAPTURE(k);
              CAPTURE(s);
              CAPTURE(pb);
              CAPTURE(pa);
              CAPTURE(ceil_mode);
              // cuDNN's windows: [o * s - pb, + k) for o < (in + 2 pb - k) / s + 1, one padding per axis.
              bool every_window_filled = true, inside_padded = true;
              for (int64_t o = 0; o < out; ++o) {
                IndexSpan w = ops::nn::PoolWindow(a, o, false);
                every_window_filled = every_window_filled && w.begin < w.end;
                inside_padded = inside_padded && o * s - pb + k <= in + pb;
              }
              bool cudnn_same_size = in + 2 * pb >= k && (in + 2 * pb - k) / s + 1 == out;
              bool expected = pa == pb && pb < k && cudnn_same_size && every_window_filled;
              CHECK(fits == expected);
              if (fits) {
                // Every window lies inside the padded input, so "include padding" divides by k.
                CHECK(inside_padded);
                ++accepted;
              }
            }
  CHECK(accepted > 100);
}

// ---- Pooling bodies against pool.cc -----------------------------------------------------------

struct PoolCase {
  Dims x;
  std::vector<int> ksize, strides{1, 1}, paddings{0, 0, 0, 0};
  bool max = true, ceil_mode = false, exclusive = true, adaptive = false, global = false;
};

std::vector<ops::pb::OpDesc::Attr> PoolAttrs(const PoolCase& c) {
  return {ops::MakeAttr("pooling_type", std::string(c.max ? "max" : "avg")),
          ops::MakeAttr("ksize", c.ksize),
          ops::MakeAttr("strides", c.strides),
          ops::MakeAttr("paddings", c.paddings),
          ops::MakeAttr("ceil_mode", c.ceil_mode),
          ops::MakeAttr("exclusive", c.exclusive),
          ops::MakeAttr("adaptive", c.adaptive),
          ops::MakeAttr("global_pooling", c.global)};
}

/// The PoolShape pool_cuda.cc builds for a case (explicit 4-value paddings).
PoolShape ShapeFor(const PoolCase& c) {
  PoolShape p{};
  p.planes = c.x[0] * c.x[1];
  for (int a = 0; a < 2; ++a) {
    int64_t in = c.x[2 + a], k = c.global ? in : c.ksize[a], s = c.strides[a];
    int64_t pb = (c.global || c.adaptive) ? 0 : c.paddings[2 * a],
            pa = (c.global || c.adaptive) ? 0 : c.paddings[2 * a + 1];
    int64_t out = c.adaptive ? c.ksize[a] : c.global ? 1 : SlidingOut(in, k, s, pb, pa, c.ceil_mode);
    p.axis[a] = {in, out, k, s, pb};
  }
  p.max = c.max;
  p.adaptive = c.adaptive;
  p.count_clipped = c.exclusive || c.adaptive;
  return p;
}

/// Values on a coarse grid, so that windows hold ties (the max gradient's first-maximum rule).
Tensor TiedTensor(DType dt, const Dims& d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(d.Numel()));
  for (double& e : v) e = static_cast<double>(rng() % 5) * 0.25 - 0.5;
  return Cast(MakeTensor<double>(d, v), dt);
}

template <class T>
void CheckPoolCase(const PoolCase& c, DType dt) {
  PoolShape p = ShapeFor(c);
  Tensor x = TiedTensor(dt, c.x, 11);
  StepRunner fwd("pool2d", {{"X", "x"}}, {{"Out", "y"}}, PoolAttrs(c));
  REQUIRE_OK(fwd.Start({{"x", x}}));
  REQUIRE_OK(fwd.Step());
  Tensor y = fwd.Get("y");
  REQUIRE(y.dims() == Dims{c.x[0], c.x[1], p.axis[0].out, p.axis[1].out});
  std::vector<T> xv = ToVector<T>(x), yv = ToVector<T>(y), got(yv.size());
  for (int64_t q = 0; q < static_cast<int64_t>(yv.size()); ++q) got[q] = ops::nn::PoolOutputAt(p, xv.data(), q);
  if (dt == DType::kFloat64 || c.max)
    CHECK(got == yv);  // the same loops (float32 averages may run on oneDNN: close, not equal)
  else
    ExpectClose(MakeTensor<T>(y.dims(), got), y, {1e-6, 1e-6}, "pool2d forward");

  Tensor dy = RandomTensor(dt, y.dims(), 12);
  StepRunner bwd("pool2d_grad", {{"X", "x"}, {"Out", "y"}, {"Out@GRAD", "dy"}}, {{"X@GRAD", "dx"}}, PoolAttrs(c));
  REQUIRE_OK(bwd.Start({{"x", x}, {"y", y}, {"dy", dy}}));
  REQUIRE_OK(bwd.Step());
  std::vector<T> dyv = ToVector<T>(dy), dxv = ToVector<T>(bwd.Get("dx")), dx(xv.size());
  if (c.max) {
    std::vector<int32_t> arg(yv.size());
    for (int64_t q = 0; q < static_cast<int64_t>(yv.size()); ++q)
      arg[q] = ops::nn::PoolArgMaxAt(p, xv.data(), yv.data(), q);
    for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i)
      dx[i] = ops::nn::PoolMaxGradAt(p, arg.data(), dyv.data(), i);
  } else {
    for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i) dx[i] = ops::nn::PoolAvgGradAt(p, dyv.data(), i);
  }
  CHECK(dx == dxv);  // gathered in pool.cc's order of additions: equal bits
}

TEST_CASE("pooling bodies reproduce pool2d and pool2d_grad on the CPU bit for bit") {
  std::vector<PoolCase> cases = {
      {.x = {2, 3, 8, 8}, .ksize = {2, 2}, .strides = {2, 2}},
      {.x = {1, 2, 7, 9}, .ksize = {3, 3}, .strides = {2, 2}, .paddings = {1, 1, 1, 1}},
      {.x = {1, 2, 7, 9}, .ksize = {3, 2}, .strides = {2, 3}, .paddings = {0, 2, 1, 0}},
      {.x = {1, 2, 7, 7}, .ksize = {3, 3}, .strides = {2, 2}, .paddings = {1, 1, 1, 1}, .ceil_mode = true},
      {.x = {1, 1, 5, 6}, .ksize = {2, 2}, .strides = {3, 3}, .paddings = {0, 0, 0, 0}, .ceil_mode = true},
      {.x = {1, 1, 4, 4}, .ksize = {2, 2}, .strides = {2, 2}, .paddings = {2, 2, 2, 2}},  // empty windows
      {.x = {2, 2, 7, 5}, .ksize = {3, 2}, .adaptive = true},
      {.x = {1, 2, 3, 4}, .ksize = {5, 7}, .adaptive = true},  // more outputs than inputs
      {.x = {2, 3, 6, 5}, .ksize = {1, 1}, .global = true},
  };
  for (const PoolCase& base : cases)
    for (bool max : {true, false})
      for (bool exclusive : {true, false}) {
        PoolCase c = base;
        c.max = max;
        c.exclusive = exclusive;
        if (max && !exclusive) continue;
        CAPTURE(c.x.ToString());
        CAPTURE(c.ksize[0]);
        CAPTURE(c.ksize[1]);
        CAPTURE(max);
        CAPTURE(exclusive);
        CAPTURE(c.adaptive);
        CAPTURE(c.global);
        CAPTURE(c.ceil_mode);
        CheckPoolCase<double>(c, DType::kFloat64);
        CheckPoolCase<float>(c, DType::kFloat32);
      }
}

// ---- Channel views and reduction splits -----------------------------------------------------

TEST_CASE("ChannelElement enumerates each channel's elements once, in memory order") {
  for (int64_t outer : {1, 2, 5})
    for (int64_t channels : {1, 3, 4})
      for (int64_t inner : {1, 2, 7}) {
        std::set<int64_t> seen;
        for (int64_t c = 0; c < channels; ++c) {
          int64_t prev = -1;
          for (int64_t j = 0; j < outer * inner; ++j) {
            int64_t i = ops::nn::ChannelElement(c, j, channels, inner);
            CHECK(ops::nn::ChannelOf(i, channels, inner) == c);
            CHECK(i > prev);
            prev = i;
            seen.insert(i);
          }
        }
        CHECK(static_cast<int64_t>(seen.size()) == outer * channels * inner);
        CHECK(*seen.rbegin() == outer * channels * inner - 1);
      }
}

TEST_CASE("SplitReduction covers every element with non-empty parts") {
  for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{2047}, int64_t{2048}, int64_t{2049}, int64_t{100000},
                    int64_t{12845056}})
    for (int64_t lines : {int64_t{1}, int64_t{3}, int64_t{64}, int64_t{5000}}) {
      CAPTURE(m);
      CAPTURE(lines);
      ops::nn::ReductionSplit sp = ops::nn::SplitReduction(m, lines);
      CHECK(sp.parts >= 1);
      if (m == 0) continue;
      CHECK(sp.chunk >= 1);
      CHECK(sp.parts * sp.chunk >= m);
      CHECK((sp.parts - 1) * sp.chunk < m);
      CHECK(sp.parts * lines <= std::max<int64_t>(ops::nn::kReductionTargetBlocks, lines) + lines);
    }
}

TEST_CASE("UnpaddedIndex maps a padded index back to the input or to the padding") {
  CHECK(ops::nn::UnpaddedIndex(0, 2, 5) == -1);
  CHECK(ops::nn::UnpaddedIndex(1, 2, 5) == -1);
  CHECK(ops::nn::UnpaddedIndex(2, 2, 5) == 0);
  CHECK(ops::nn::UnpaddedIndex(6, 2, 5) == 4);
  CHECK(ops::nn::UnpaddedIndex(7, 2, 5) == -1);
  CHECK(ops::nn::UnpaddedIndex(0, 0, 1) == 0);
}

// ---- Embedding gradient --------------------------------------------------------------------------

TEST_CASE("EmbeddingKey and KeyBits") {
  CHECK(ops::nn::EmbeddingKey(3, 10, -1) == 3u);
  CHECK(ops::nn::EmbeddingKey(3, 10, 3) == 10u);
  CHECK(ops::nn::EmbeddingKey(-1, 10, -1) == 10u);  // -1 is "no padding", and out of range
  CHECK(ops::nn::EmbeddingKey(10, 10, -1) == 10u);
  CHECK(ops::nn::EmbeddingKey(12, 10, 12) == 10u);
  for (int64_t vocab :
       {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{255}, int64_t{256}, int64_t{30000}, int64_t{2147483646}}) {
    int bits = ops::nn::KeyBits(vocab);
    CAPTURE(vocab);
    CHECK((int64_t{1} << bits) > vocab);                        // every key in [0, vocab] fits
    CHECK((bits == 1 || (int64_t{1} << (bits - 1)) <= vocab));  // and no bit is wasted
  }
}

/// embedding.cu's gradient on the host: stable sort of (key, position), then EmbeddingRunSum.
template <class T>
std::vector<T> SortedGradient(const std::vector<int64_t>& ids, const std::vector<T>& dout, int64_t vocab, int64_t dim,
                              int64_t padding_idx) {
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<uint32_t> keys(n), pos(n);
  for (int64_t i = 0; i < n; ++i) {
    keys[i] = ops::nn::EmbeddingKey(ids[i], vocab, padding_idx);
    pos[i] = static_cast<uint32_t>(i);
  }
  std::stable_sort(pos.begin(), pos.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<uint32_t> sorted_keys(n);
  for (int64_t r = 0; r < n; ++r) sorted_keys[r] = keys[pos[r]];
  std::vector<T> dw(static_cast<size_t>(vocab * dim), T(0));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < dim; ++j) {
      T sum;
      if (ops::nn::EmbeddingRunSum(sorted_keys.data(), pos.data(), n, dim, static_cast<uint32_t>(vocab), dout.data(), r,
                                   j, &sum))
        dw[sorted_keys[r] * dim + j] = sum;
    }
  return dw;
}

template <class T>
void CheckEmbeddingGradient(DType dt, int64_t padding_idx) {
  const int64_t vocab = 37, dim = 5, n = 300;
  std::mt19937_64 rng(5);
  std::vector<int64_t> ids(n);
  for (auto& id : ids) id = static_cast<int64_t>(rng() % 20);  // many repeats, some rows untouched
  Tensor dout = RandomTensor(dt, {n, dim}, 6);
  StepRunner run("lookup_table_v2_grad", {{"W", "w"}, {"Ids", "ids"}, {"Out@GRAD", "dout"}}, {{"W@GRAD", "dw"}},
                 {ops::MakeAttr("padding_idx", padding_idx)});
  REQUIRE_OK(
      run.Start({{"w", RandomTensor(dt, {vocab, dim}, 7)}, {"ids", MakeTensor<int64_t>({n}, ids)}, {"dout", dout}}));
  REQUIRE_OK(run.Step());
  CHECK(SortedGradient<T>(ids, ToVector<T>(dout), vocab, dim, padding_idx) == ToVector<T>(run.Get("dw")));
}

TEST_CASE("the sorted run sums reproduce lookup_table_v2_grad on the CPU bit for bit") {
  for (int64_t pad : {int64_t{-1}, int64_t{4}}) {
    CAPTURE(pad);
    CheckEmbeddingGradient<float>(DType::kFloat32, pad);
    CheckEmbeddingGradient<double>(DType::kFloat64, pad);
  }
}

// ---- Dropout ----------------------------------------------------------------------------------------

TEST_CASE("DropoutKeepBits draws dropout's CPU mask bit for bit, step after step") {
  const int64_t n = 1031;  // not a multiple of 4
  const float p = 0.3f;
  StepRunner run("dropout", {{"X", "x"}}, {{"Out", "y"}, {"Mask", "mask"}},
                 {ops::MakeAttr("dropout_prob", p), ops::MakeAttr("fix_seed", true), ops::MakeAttr("seed", 1234)});
  REQUIRE_OK(run.Start({{"x", RandomTensor(DType::kFloat32, {n}, 8)}}));
  ops::Philox philox(1234);
  for (uint64_t step = 0; step < 3; ++step) {
    REQUIRE_OK(run.Step());
    std::vector<uint8_t> mask = ToVector<uint8_t>(run.Get("mask"));
    std::vector<uint8_t> got(n);
    for (int64_t blk = 0; blk < (n + 3) / 4; ++blk) {
      unsigned bits = ops::nn::DropoutKeepBits(philox, step, blk, p);
      for (int64_t l = 0; l < 4 && blk * 4 + l < n; ++l) got[blk * 4 + l] = (bits >> l) & 1u;
    }
    CAPTURE(step);
    CHECK(got == mask);
  }
}

}  // namespace
}  // namespace paddlec::testing
