// Host tests of the index arithmetic the tensor family's CUDA kernels use (tensor_index.h): the
// transpose plans are replayed on the CPU exactly as the kernels walk them and compared with a naive
// transpose; part lookup, copy units and top_k's order are checked case by case.
#include "tensor/tensor_index.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace paddlec::ops::tensor_index {
namespace {

/// out[o] = in[i] where output axis a takes input axis perm[a], element by element.
std::vector<int> NaiveTranspose(const std::vector<int>& in, const std::vector<int64_t>& dims,
                                const std::vector<int>& perm) {
  const int r = static_cast<int>(dims.size());
  std::vector<int64_t> in_stride(r, 1), out_dims(r);
  for (int a = r - 2; a >= 0; --a) in_stride[a] = in_stride[a + 1] * dims[a + 1];
  for (int a = 0; a < r; ++a) out_dims[a] = dims[perm[a]];
  std::vector<int> out(in.size());
  for (size_t o = 0; o < in.size(); ++o) {
    int64_t q = static_cast<int64_t>(o), src = 0;
    for (int a = r - 1; a >= 0; --a) {
      src += (q % out_dims[a]) * in_stride[perm[a]];
      q /= out_dims[a];
    }
    out[o] = in[src];
  }
  return out;
}

/// The transpose as the CUDA kernels compute it from the plan (shape.cu), serially.
std::vector<int> PlannedTranspose(const std::vector<int>& in, const TransposePlan& p) {
  std::vector<int> out(in.size(), -1);
  switch (p.kind) {
    case TransposeKind::kCopy:
      out = in;
      break;
    case TransposeKind::kGather:
      for (int64_t i = 0; i < p.n; ++i) {
        out[i] = in[GatherOffset<int64_t>(p, i)];
        CHECK(GatherOffset<int32_t>(p, static_cast<int32_t>(i)) == GatherOffset<int64_t>(p, i));
      }
      break;
    case TransposeKind::kTiles:
      for (int64_t b = 0; b < p.batch; ++b) {
        int64_t src, dst;
        BatchOffsets(p, b, &src, &dst);
        for (int64_t r = 0; r < p.rows; ++r)
          for (int64_t c = 0; c < p.cols; ++c) out[dst + c * p.dst_col + r] = in[src + r * p.src_row + c];
      }
      break;
  }
  return out;
}

void CheckPlan(const std::vector<int64_t>& dims, const std::vector<int>& perm, TransposeKind expected) {
  CAPTURE(dims.size());
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int> in(n);
  std::iota(in.begin(), in.end(), 0);
  const TransposePlan p = MakeTransposePlan(dims.data(), perm.data(), static_cast<int>(dims.size()));
  CHECK(p.n == n);
  CHECK(static_cast<int>(p.kind) == static_cast<int>(expected));
  CHECK(PlannedTranspose(in, p) == NaiveTranspose(in, dims, perm));
}

TEST_CASE("tensor_index: transpose plans pick the kernel and reproduce a naive transpose") {
  CheckPlan({2, 3, 4}, {0, 1, 2}, TransposeKind::kCopy);
  CheckPlan({2, 1, 4}, {1, 0, 2}, TransposeKind::kCopy);  // only a size-1 axis moves
  CheckPlan({5}, {0}, TransposeKind::kCopy);
  CheckPlan({}, {}, TransposeKind::kCopy);
  CheckPlan({2, 0, 3}, {2, 1, 0}, TransposeKind::kCopy);          // empty
  CheckPlan({3, 4}, {1, 0}, TransposeKind::kTiles);               // matrix
  CheckPlan({2, 3, 4, 5}, {0, 2, 3, 1}, TransposeKind::kTiles);   // NCHW -> NHWC
  CheckPlan({2, 4, 5, 3}, {0, 3, 1, 2}, TransposeKind::kTiles);   // NHWC -> NCHW
  CheckPlan({2, 3, 4, 5}, {0, 2, 1, 3}, TransposeKind::kGather);  // attention heads: last axis stays
  CheckPlan({2, 3, 4, 5}, {2, 0, 1, 3}, TransposeKind::kGather);
  CheckPlan({3, 1, 4, 1, 5}, {4, 3, 2, 1, 0}, TransposeKind::kTiles);
  CheckPlan({2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}, TransposeKind::kTiles);
  CheckPlan({40, 70}, {1, 0}, TransposeKind::kTiles);  // several tiles, ragged edges
}

TEST_CASE("tensor_index: random permutations of random shapes") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int r = 1 + static_cast<int>(rng() % 6);
    std::vector<int64_t> dims(r);
    for (auto& d : dims) d = 1 + static_cast<int64_t>(rng() % 4);
    std::vector<int> perm(r);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    CAPTURE(trial);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<int> in(n);
    std::iota(in.begin(), in.end(), 0);
    const TransposePlan p = MakeTransposePlan(dims.data(), perm.data(), r);
    CHECK(PlannedTranspose(in, p) == NaiveTranspose(in, dims, perm));
    // The inverse permutation undoes it (transpose2_grad).
    int inv[kMaxRank];
    InvertPermutation(perm.data(), r, inv);
    std::vector<int64_t> out_dims(r);
    for (int a = 0; a < r; ++a) out_dims[a] = dims[perm[a]];
    const TransposePlan back = MakeTransposePlan(out_dims.data(), inv, r);
    CHECK(PlannedTranspose(PlannedTranspose(in, p), back) == in);
  }
}

TEST_CASE("tensor_index: coalescing merges axes that stay together and drops size-1 axes") {
  const int64_t dims[] = {2, 3, 1, 4, 5};
  const int perm[] = {3, 4, 2, 0, 1};  // (4, 5) moves before (2, 3) as a block
  int64_t cdims[kMaxRank];
  int cperm[kMaxRank], crank = 0;
  Coalesce(dims, perm, 5, cdims, cperm, &crank);
  REQUIRE(crank == 2);
  CHECK(cdims[0] == 6);
  CHECK(cdims[1] == 20);
  CHECK(cperm[0] == 1);
  CHECK(cperm[1] == 0);
}

TEST_CASE("tensor_index: part lookup finds the part holding a column, skipping empty parts") {
  PartTable t;
  t.count = 4;
  const int64_t off[] = {10, 13, 13, 20, 21};  // parts of 3, 0, 7 and 1 columns
  std::copy(off, off + 5, t.offset);
  for (int64_t c = 10; c < 21; ++c) {
    CAPTURE(c);
    const int p = FindPart(t, c);
    CHECK(t.offset[p] <= c);
    CHECK(c < t.offset[p + 1]);
  }
  CHECK(FindPart(t, 12) == 0);
  CHECK(FindPart(t, 13) == 2);
  CHECK(FindPart(t, 20) == 3);
  t.count = 1;
  t.offset[1] = 11;
  CHECK(FindPart(t, 10) == 0);
}

TEST_CASE("tensor_index: the copy unit divides every address and size") {
  CHECK(CopyUnit(0) == 16);
  CHECK(CopyUnit(4096 | 48) == 16);
  CHECK(CopyUnit(4096 | 24) == 8);
  CHECK(CopyUnit(12) == 4);
  CHECK(CopyUnit(6) == 2);
  CHECK(CopyUnit(4096 | 3) == 1);
}

TEST_CASE("tensor_index: top_k's order ranks NaN above numbers and breaks ties by index") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(ValueBefore(2.0, 1.0, true));
  CHECK_FALSE(ValueBefore(2.0, 1.0, false));
  CHECK(ValueBefore(nan, 1e300, true));    // largest: NaN first
  CHECK(ValueBefore(-1e300, nan, false));  // smallest: NaN last
  CHECK_FALSE(ValueBefore(nan, nan, true));
  CHECK(RankBefore(nan, 1, nan, 2, true));
  CHECK_FALSE(RankBefore(nan, 2, nan, 1, false));
  CHECK(RankBefore(5.0, 3, 5.0, 4, true));
  CHECK(RankBefore(0.0, 0, -0.0, 1, true));  // equal values: the lower index
  CHECK(RankBefore(-0.0, 0, 0.0, 1, true));
  CHECK(RankBefore<int64_t>(7, 9, 3, 0, true));
  CHECK(RankBefore<int32_t>(3, 9, 7, 0, false));
  CHECK_FALSE(IsNan<int32_t>(0));

  // Selecting by k passes of "best after the previous winner" gives the order of a stable sort by
  // RankBefore, which is what the CPU kernel returns.
  const std::vector<float> v = {1, std::nanf(""), 3, 3, -2, std::nanf(""), 0, 3};
  for (bool largest : {true, false}) {
    std::vector<int64_t> expect(v.size());
    std::iota(expect.begin(), expect.end(), 0);
    std::stable_sort(expect.begin(), expect.end(),
                     [&](int64_t a, int64_t b) { return ValueBefore(v[a], v[b], largest); });
    int64_t prev = -1;
    for (size_t t = 0; t < v.size(); ++t) {
      int64_t best = -1;
      for (int64_t j = 0; j < static_cast<int64_t>(v.size()); ++j) {
        if (prev >= 0 && !RankBefore(v[prev], prev, v[j], j, largest)) continue;
        if (best < 0 || RankBefore(v[j], j, v[best], best, largest)) best = j;
      }
      CHECK(best == expect[t]);
      prev = best;
    }
  }
}

TEST_CASE("tensor_index: line bases of an [outer, n, inner] view") {
  CHECK(LineBase(0, 5, 1) == 0);
  CHECK(LineBase(3, 5, 1) == 15);
  CHECK(LineBase(3, 5, 2) == 11);  // o = 1, i = 1: 1 * 5 * 2 + 1
  CHECK(LineBase(4, 5, 2) == 20);
}

}  // namespace
}  // namespace paddlec::ops::tensor_index

namespace paddlec::ops::tensor_index {
namespace {

// ---- strided views (slice on the GPU) ----------------------------------------------------------

/// A box [start, start + len) of a row-major tensor of `dims`, read as the CUDA slice kernels read it
/// (shape.cu's StridedCopy): one memcpy for kCopy, else element i at GatherOffset(i) past the box's
/// first element.
std::vector<int> PlannedBox(const std::vector<int>& in, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& start, const std::vector<int64_t>& len) {
  const int r = static_cast<int>(dims.size());
  std::vector<int64_t> stride(r, 1);
  for (int a = r - 2; a >= 0; --a) stride[a] = stride[a + 1] * dims[a + 1];
  int64_t base = 0;
  for (int a = 0; a < r; ++a) base += start[a] * stride[a];
  const TransposePlan p = MakeStridedPlan(len.data(), stride.data(), r);
  std::vector<int> out(static_cast<size_t>(p.n));
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = in[base + (p.kind == TransposeKind::kCopy ? i : GatherOffset<int64_t>(p, i))];
  return out;
}

std::vector<int> NaiveBox(const std::vector<int>& in, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& start, const std::vector<int64_t>& len) {
  const int r = static_cast<int>(dims.size());
  int64_t n = 1;
  for (int64_t l : len) n *= l;
  std::vector<int> out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t q = i, src = 0, stride = 1;
    for (int a = r - 1; a >= 0; --a) {
      src += (start[a] + q % len[a]) * stride;
      q /= len[a];
      stride *= dims[a];
    }
    out.push_back(in[src]);
  }
  return out;
}

TEST_CASE("strided plans read slice boxes as a naive walk does") {
  struct Case {
    std::vector<int64_t> dims, start, len;
    TransposeKind kind;
  };
  const Case cases[] = {
      {{4, 5, 6}, {0, 0, 0}, {4, 5, 6}, TransposeKind::kCopy},    // the whole tensor
      {{4, 5, 6}, {1, 0, 0}, {2, 5, 6}, TransposeKind::kCopy},    // leading rows: one contiguous run
      {{4, 5, 6}, {0, 2, 0}, {4, 1, 6}, TransposeKind::kGather},  // x[:, 2]
      {{4, 5, 6}, {1, 1, 2}, {2, 3, 3}, TransposeKind::kGather},  // a box in every axis
      {{4, 5, 6}, {3, 4, 5}, {1, 1, 1}, TransposeKind::kCopy},    // one element
      {{3}, {0}, {0}, TransposeKind::kCopy},                      // empty
      {{2, 1, 7, 1}, {1, 0, 2, 0}, {1, 1, 4, 1}, TransposeKind::kCopy},
  };
  for (const Case& c : cases) {
    CAPTURE(c.dims.size());
    int64_t n = 1;
    for (int64_t d : c.dims) n *= d;
    std::vector<int> in(static_cast<size_t>(n));
    std::iota(in.begin(), in.end(), 0);
    std::vector<int64_t> stride(c.dims.size(), 1);
    for (int a = static_cast<int>(c.dims.size()) - 2; a >= 0; --a) stride[a] = stride[a + 1] * c.dims[a + 1];
    CHECK(MakeStridedPlan(c.len.data(), stride.data(), static_cast<int>(c.dims.size())).kind == c.kind);
    CHECK(PlannedBox(in, c.dims, c.start, c.len) == NaiveBox(in, c.dims, c.start, c.len));
  }
  // Random boxes of random shapes up to rank 6.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int r = 1 + static_cast<int>(rng() % 6);
    std::vector<int64_t> dims(r), start(r), len(r);
    int64_t n = 1;
    for (int a = 0; a < r; ++a) {
      dims[a] = 1 + rng() % 4;
      start[a] = rng() % dims[a];
      len[a] = 1 + rng() % (dims[a] - start[a]);
      n *= dims[a];
    }
    std::vector<int> in(static_cast<size_t>(n));
    std::iota(in.begin(), in.end(), 0);
    CHECK(PlannedBox(in, dims, start, len) == NaiveBox(in, dims, start, len));
  }
}

}  // namespace
}  // namespace paddlec::ops::tensor_index
