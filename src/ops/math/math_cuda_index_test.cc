// The index arithmetic and launch planning of the math family's CUDA kernels, run on the host:
// broadcast offsets, reductions split into kept and reduced dims, reduction launch plans, and the
// row-major -> column-major mapping of batched products checked against a reference column-major
// GEMM with BLAS's exact argument semantics.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "math/math_cuda_plan.h"

namespace paddlec::ops::cuda {
namespace {

std::vector<int64_t> Unravel(int64_t i, const Dims& dims) {
  std::vector<int64_t> idx(dims.rank());
  for (int d = dims.rank() - 1; d >= 0; --d) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  return idx;
}

/// Flat index in `aligned` (same rank; size-1 dims read index 0) of a multi-index.
int64_t Ravel(const std::vector<int64_t>& idx, const Dims& aligned) {
  int64_t off = 0;
  for (int d = 0; d < aligned.rank(); ++d) off = off * aligned[d] + (aligned[d] == 1 ? 0 : idx[d]);
  return off;
}

struct Case {
  const char* name;
  Dims x, y;
  int axis;
};
const Case kCases[] = {
    {"equal shapes", {3, 5}, {3, 5}, -1},
    {"single element", {1}, {1}, -1},
    {"trailing", {2, 3, 4, 5}, {4, 5}, -1},
    {"middle", {2, 3, 4, 5}, {3, 4}, 1},
    {"per-channel", {2, 3, 4, 5}, {3}, 1},
    {"leading with trailing 1", {2, 3, 4, 5}, {2, 1}, 0},
    {"scalar-like", {2, 3}, {1}, -1},
    {"0-D Y", {7}, {}, -1},
    {"bias row", {7, 13}, {13}, -1},
    {"rank(Y) > rank(X)", {4, 5}, {2, 3, 4, 5}, -1},
    {"rank(Y) > rank(X) at axis 1", {3}, {2, 3, 4}, 1},
    {"size-1 dims on both sides", {2, 1, 4}, {3, 4}, -1},
    {"column", {7, 3}, {7, 1}, -1},
    {"alternating", {2, 1, 3, 1, 2}, {1, 4, 1, 5, 1}, -1},
    {"rank 9", {2, 1, 2, 1, 2, 1, 2, 1, 3}, {1, 2, 1, 2, 1, 2, 1, 2, 1}, -1},
    {"empty", {0, 3}, {3}, -1},
};

template <class I, int N>
std::array<int64_t, N> OffsetsAs(const StridedIndex<N>& s, int64_t i) {
  I off[N];
  s.template Offsets<I>(static_cast<I>(i), off);
  std::array<int64_t, N> r;
  for (int k = 0; k < N; ++k) r[k] = static_cast<int64_t>(off[k]);
  return r;
}

TEST_CASE("StridedIndex gives each operand's broadcast offset, in 32-bit and 64-bit arithmetic") {
  for (const Case& c : kCases) {
    CAPTURE(c.name);
    auto s = math::BroadcastElementwise(c.x, c.y, c.axis);
    REQUIRE(s.ok());
    const StridedIndex<2> idx = BinaryIndex(*s);
    CHECK(idx.numel() == s->out.Numel());
    for (int64_t i = 0; i < s->out.Numel(); ++i) {
      const auto multi = Unravel(i, s->out);
      const std::array<int64_t, 2> want = {Ravel(multi, s->x), Ravel(multi, s->y)};
      CHECK(OffsetsAs<int64_t>(idx, i) == want);
      CHECK(OffsetsAs<uint32_t>(idx, i) == want);
    }
  }
}

/// Walks a ReduceIndex as the kernels do and checks every (j, r) against the reference: the
/// operands' offsets, the target's flat index j, and that each source element is visited once.
template <int N>
void CheckReduction(const ReduceIndex<N>& ri, const Dims& full, const std::vector<Dims>& aligned, int target) {
  CHECK(ri.m == aligned[target].Numel());
  CHECK(ri.m * ri.r == full.Numel());
  std::vector<int> seen(full.Numel(), 0);
  for (int64_t j = 0; j < ri.m; ++j)
    for (int64_t r = 0; r < ri.r; ++r) {
      int64_t off[N];
      ri.template Offsets<int64_t>(j, r, off);
      uint32_t off32[N];
      ri.template Offsets<uint32_t>(static_cast<uint32_t>(j), static_cast<uint32_t>(r), off32);
      // Operand 0 walks `full` contiguously: its offset is the source element's flat index.
      REQUIRE(off[0] >= 0);
      REQUIRE(off[0] < full.Numel());
      ++seen[off[0]];
      const auto multi = Unravel(off[0], full);
      CHECK(Ravel(multi, aligned[target]) == j);
      for (int k = 0; k < N; ++k) {
        CHECK(off[k] == Ravel(multi, aligned[k]));
        CHECK(static_cast<int64_t>(off32[k]) == off[k]);
      }
    }
  for (int v : seen) CHECK(v == 1);
}

TEST_CASE("binary gradients split into the dims each operand keeps and the dims summed onto it") {
  for (const Case& c : kCases) {
    CAPTURE(c.name);
    auto s = math::BroadcastElementwise(c.x, c.y, c.axis);
    REQUIRE(s.ok());
    for (int target : {kGradOpX, kGradOpY}) {
      CAPTURE(target);
      const ReduceIndex<3> ri = BinaryGradIndex(*s, target);
      CheckReduction(ri, s->out, {s->out, s->x, s->y}, target);
      // The innermost dim is reduced exactly when the target is broadcast along Out's last non-1 dim.
      const Dims& t = target == kGradOpX ? s->x : s->y;
      int last = s->out.rank() - 1;
      while (last >= 0 && s->out[last] == 1) --last;
      if (last >= 0 && s->out.Numel() > 0) CHECK(ri.inner_reduced == (t[last] == 1));
    }
  }
}

TEST_CASE("reductions onto kept dims and broadcasts back") {
  struct R {
    Dims x;
    uint32_t mask;  // bit i: axis i reduced
  };
  const R kReds[] = {{{6}, 1},
                     {{4, 5}, 1},
                     {{4, 5}, 2},
                     {{4, 5}, 3},
                     {{2, 3, 4, 5}, 0b0101},
                     {{2, 3, 4, 5}, 0b1010},
                     {{2, 3, 4, 5}, 0b0110},
                     {{2, 3, 4, 5}, 0},
                     {{2, 1, 3}, 0b010},
                     {{}, 0},
                     {{0, 3}, 1},
                     {{3, 0}, 1},
                     {{1, 1}, 3}};
  for (const R& c : kReds) {
    CAPTURE(c.x.ToString());
    CAPTURE(c.mask);
    Dims kept = c.x;
    for (int i = 0; i < c.x.rank(); ++i)
      if (c.mask & (1u << i)) kept[i] = 1;
    const ReduceIndex<2> ri = ReduceOnto(c.x, kept);
    CheckReduction(ri, c.x, {c.x, kept}, 1);
    const StridedIndex<2> b = BroadcastFrom(c.x, kept);
    for (int64_t i = 0; i < c.x.Numel(); ++i) {
      const std::array<int64_t, 2> want = {i, Ravel(Unravel(i, c.x), kept)};
      CHECK(OffsetsAs<int64_t>(b, i) == want);
    }
  }
}

TEST_CASE("reduction plans cover every contribution once and bound the scratch") {
  const int64_t kSizes[] = {0, 1, 2, 31, 32, 33, 255, 1000, 1024, 1025, 4096, 100000, 1 << 20, int64_t{1} << 30};
  for (int64_t m : kSizes)
    for (int64_t r : kSizes)
      for (bool inner : {false, true}) {
        CAPTURE(m);
        CAPTURE(r);
        CAPTURE(inner);
        const ReducePlan p = PlanReduce(m, r, inner);
        CHECK(p.rows == inner);
        CHECK(p.groups >= 1);
        CHECK(p.groups <= kReduceMaxGroups);
        if (m > 0 && r > 0) {
          CHECK(p.chunk >= 1);
          CHECK(p.groups * p.chunk >= r);       // every contribution in some group
          CHECK((p.groups - 1) * p.chunk < r);  // and no group empty
          CHECK(p.scratch_elems == (p.groups > 1 ? p.groups * m : 0));
          if (p.block) CHECK(r > kReduceBlockChunk);
        } else {
          CHECK(p.groups == 1);
          CHECK(p.scratch_elems == 0);
        }
      }
  // Small reductions stay one pass; a long full reduction is split into many chunks.
  CHECK(PlanReduce(1000, 10, true).groups == 1);
  CHECK(PlanReduce(1, 1 << 24, true).groups > 100);
  CHECK(PlanReduce(1, 1 << 24, true).block);
  CHECK(PlanReduce(10, 1 << 20, false).groups > 100);
}

/// BLAS's column-major sgemm with alpha 1 and beta 0, by its definition: C (m x n, ldc) = op(A) op(B),
/// op(A) m x k (A stored k x m when transposed), op(B) k x n.
void ReferenceColumnMajorGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                              const double* b, int64_t ldb, double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double av = ta ? a[l + i * lda] : a[i + l * lda];
        const double bv = tb ? b[j + l * ldb] : b[l + j * ldb];
        s += av * bv;
      }
      c[i + j * ldc] = s;
    }
}

/// Row-major reference: C[batch..., M, N] = op(A) op(B) with batch broadcasting.
std::vector<double> ReferenceProduct(const math::GemmShape& s, const std::vector<double>& a,
                                     const std::vector<double>& b) {
  const int64_t batch = s.c_batch.Numel();
  std::vector<double> c(batch * s.m * s.n);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const auto idx = Unravel(bi, s.c_batch);
    const double* ap = a.data() + Ravel(idx, s.a_batch) * s.m * s.k;
    const double* bp = b.data() + Ravel(idx, s.b_batch) * s.k * s.n;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < s.k; ++l)
          acc += (s.trans_a ? ap[l * s.m + i] : ap[i * s.k + l]) * (s.trans_b ? bp[j * s.k + l] : bp[l * s.n + j]);
        c[(bi * s.m + i) * s.n + j] = acc;
      }
  }
  return c;
}

TEST_CASE("row-major batched products map onto column-major strided-batched calls") {
  struct G {
    Dims a_batch, b_batch, c_batch;
    int64_t calls;  // expected strided-batched calls
  };
  const G kBatches[] = {
      {{}, {}, {}, 1},
      {{3}, {3}, {3}, 1},
      {{3}, {1}, {3}, 1},
      {{1}, {3}, {3}, 1},
      {{2, 3}, {2, 3}, {2, 3}, 1},
      {{2, 3}, {1, 1}, {2, 3}, 1},
      {{2, 1}, {1, 3}, {2, 3}, 2},
      {{1, 3}, {2, 3}, {2, 3}, 2},
      {{2, 3, 4}, {2, 1, 4}, {2, 3, 4}, 6},  // B broadcast between two batched dims
  };
  int seed = 1;
  for (const G& g : kBatches)
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [m, k, n] : {std::array<int64_t, 3>{2, 3, 4}, {1, 5, 1}, {3, 1, 2}, {4, 4, 4}}) {
          CAPTURE(g.c_batch.ToString());
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(m);
          CAPTURE(k);
          CAPTURE(n);
          const math::GemmShape s{g.a_batch, g.b_batch, g.c_batch, m, k, n, ta, tb};
          std::vector<double> a(g.a_batch.Numel() * m * k), b(g.b_batch.Numel() * k * n);
          for (double& v : a) v = (seed++ % 17) - 8;
          for (double& v : b) v = (seed++ % 13) - 6;
          const ColumnMajorGemm cm = ToColumnMajor(s);
          const GemmBatches batches = PlanGemmBatches(s);
          std::vector<double> c(g.c_batch.Numel() * m * n, -1e300);
          int64_t calls = 0;
          ForEachGemmCall(batches, [&](int64_t ao, int64_t bo, int64_t co) {
            ++calls;
            for (int64_t i = 0; i < batches.count; ++i)
              ReferenceColumnMajorGemm(
                  cm.trans_first, cm.trans_second, cm.m, cm.n, cm.k, b.data() + bo + i * batches.stride[1], cm.ld_first,
                  a.data() + ao + i * batches.stride[0], cm.ld_second, c.data() + co + i * batches.stride[2], cm.ldc);
          });
          CHECK(calls == g.calls);
          CHECK(c == ReferenceProduct(s, a, b));
          // BLAS's argument rules: leading dims at least the stored rows.
          CHECK(cm.ld_first >= std::max<int64_t>(1, cm.trans_first ? cm.k : cm.m));
          CHECK(cm.ld_second >= std::max<int64_t>(1, cm.trans_second ? cm.n : cm.k));
          CHECK(cm.ldc >= std::max<int64_t>(1, cm.m));
        }
}

}  // namespace
}  // namespace paddlec::ops::cuda
