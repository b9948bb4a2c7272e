// Index arithmetic of the tensor family's CUDA kernels, shared by the device code (the .cu files) and
// the host code that plans the launches (tensor_cuda.cc, index_cuda.cc): transpose plans (coalesced
// permutations, gathers and batched 2-D tiles) and strided views (slice), the part lookup of concat
// and split, the copy unit of byte moves, and the total order of top_k_v2. Plain __host__ __device__ code without
// paddlec headers, so nvcc compiles it and the host compiler unit-tests it (tensor_index_test.cc).
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PC_TENSOR_HD __host__ __device__
#else
#define PC_TENSOR_HD
#endif

namespace paddlec::ops::tensor_index {

/// paddlec's kMaxRank (tensor_cuda.cc checks that the two agree).
inline constexpr int kMaxRank = 9;

// ---- transpose ------------------------------------------------------------------------------

/// How a transpose runs after coalescing (see MakeTransposePlan).
enum class TransposeKind : int {
  kCopy,    // the identity on the element order: one memcpy
  kGather,  // the input's last axis stays last: out[i] = in[GatherOffset(i)], contiguous runs
  kTiles,   // a batch of 2-D transposes between the input's and the output's last axes
};

/// Everything a transpose kernel needs, in plain values (passed to kernels by value).
struct TransposePlan {
  TransposeKind kind = TransposeKind::kCopy;
  int64_t n = 0;  // elements
  // kGather: the output's dims and, per output axis, the input stride of that axis.
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t src_stride[kMaxRank] = {};
  // kTiles: out[dst + c * dst_col + r] = in[src + r * src_row + c] for r < rows, c < cols, where
  // (src, dst) are the offsets of batch entry b (BatchOffsets) over the nb remaining axes.
  int64_t rows = 0, cols = 0, src_row = 0, dst_col = 0;
  int nb = 0;
  int64_t bdims[kMaxRank] = {};
  int64_t bsrc[kMaxRank] = {};
  int64_t bdst[kMaxRank] = {};
  int64_t batch = 1;  // product of bdims
};

/// Drops size-1 axes of `dims` and merges runs of input axes that stay adjacent and in order in the
/// output. Output axis i takes input axis perm[i]. The element order of the result is unchanged:
/// out_dims[i] = cdims[cperm[i]] over the coalesced rank *crank.
PC_TENSOR_HD inline void Coalesce(const int64_t* dims, const int* perm, int rank, int64_t* cdims, int* cperm,
                                  int* crank) {
  int renum[kMaxRank];
  int64_t kept[kMaxRank];
  int nkept = 0;
  for (int a = 0; a < rank; ++a) {
    renum[a] = dims[a] == 1 ? -1 : nkept;
    if (dims[a] != 1) kept[nkept++] = dims[a];
  }
  int p[kMaxRank];
  int np = 0;
  for (int i = 0; i < rank; ++i)
    if (renum[perm[i]] >= 0) p[np++] = renum[perm[i]];
  // Runs of consecutive input axes in output order; each run starts at input axis out_groups[g].
  bool starts[kMaxRank] = {};
  int out_groups[kMaxRank];
  int ngroups = 0;
  for (int i = 0; i < np; ++i) {
    if (i > 0 && p[i] == p[i - 1] + 1) continue;
    starts[p[i]] = true;
    out_groups[ngroups++] = p[i];
  }
  // Merged input dims in input order: a new group begins at every run start.
  int group_of[kMaxRank] = {};
  int g = -1;
  for (int a = 0; a < nkept; ++a) {
    if (starts[a]) {
      cdims[++g] = kept[a];
      group_of[a] = g;
    } else {
      cdims[g] *= kept[a];
    }
  }
  *crank = ngroups;
  for (int i = 0; i < ngroups; ++i) cperm[i] = group_of[out_groups[i]];
}

/// The plan for Out = transpose(In) with In of `dims` (rank <= kMaxRank) and permutation `perm`
/// (output axis i takes input axis perm[i], already validated and normalized).
PC_TENSOR_HD inline TransposePlan MakeTransposePlan(const int64_t* dims, const int* perm, int rank) {
  TransposePlan plan;
  int64_t n = 1;
  for (int a = 0; a < rank; ++a) n *= dims[a];
  plan.n = n;
  int64_t d[kMaxRank];
  int p[kMaxRank];
  int r = 0;
  Coalesce(dims, perm, rank, d, p, &r);
  if (n == 0 || r <= 1) {
    plan.kind = TransposeKind::kCopy;
    return plan;
  }
  int64_t in_stride[kMaxRank];
  in_stride[r - 1] = 1;
  for (int a = r - 2; a >= 0; --a) in_stride[a] = in_stride[a + 1] * d[a + 1];
  int64_t out_stride[kMaxRank];
  plan.rank = r;
  for (int i = 0; i < r; ++i) {
    plan.out_dims[i] = d[p[i]];
    plan.src_stride[i] = in_stride[p[i]];
  }
  out_stride[r - 1] = 1;
  for (int i = r - 2; i >= 0; --i) out_stride[i] = out_stride[i + 1] * plan.out_dims[i + 1];
  if (p[r - 1] == r - 1) {
    plan.kind = TransposeKind::kGather;
    return plan;
  }
  // Rows run along input axis p[r-1] (the output's last axis, contiguous in Out), columns along input
  // axis r-1 (contiguous in In), found at output position jc; the other output axes index the batch.
  plan.kind = TransposeKind::kTiles;
  int jc = 0;
  while (p[jc] != r - 1) ++jc;
  plan.rows = plan.out_dims[r - 1];
  plan.cols = d[r - 1];
  plan.src_row = plan.src_stride[r - 1];
  plan.dst_col = out_stride[jc];
  for (int i = 0; i < r - 1; ++i) {
    if (i == jc) continue;
    plan.bdims[plan.nb] = plan.out_dims[i];
    plan.bsrc[plan.nb] = plan.src_stride[i];
    plan.bdst[plan.nb] = out_stride[i];
    plan.batch *= plan.out_dims[i];
    ++plan.nb;
  }
  return plan;
}

/// kGather: the input offset of output element `i` (0 <= i < n). Index is int32_t when n < 2^31.
template <class Index>
PC_TENSOR_HD inline Index GatherOffset(const TransposePlan& p, Index i) {
  Index src = 0;
  for (int a = p.rank - 1; a >= 0; --a) {
    const Index dim = static_cast<Index>(p.out_dims[a]);
    src += (i % dim) * static_cast<Index>(p.src_stride[a]);
    i /= dim;
  }
  return src;
}

/// kTiles: the input and output offsets of batch entry `b` (0 <= b < batch).
PC_TENSOR_HD inline void BatchOffsets(const TransposePlan& p, int64_t b, int64_t* src, int64_t* dst) {
  int64_t s = 0, t = 0;
  for (int i = p.nb - 1; i >= 0; --i) {
    const int64_t k = b % p.bdims[i];
    b /= p.bdims[i];
    s += k * p.bsrc[i];
    t += k * p.bdst[i];
  }
  *src = s;
  *dst = t;
}

/// The inverse permutation: inv[perm[i]] = i.
PC_TENSOR_HD inline void InvertPermutation(const int* perm, int rank, int* inv) {
  for (int i = 0; i < rank; ++i) inv[perm[i]] = i;
}

// ---- strided views (slice) ----------------------------------------------------------------------

/// A plan whose Out (dims `out_dims`, row-major) reads its source at sum_i idx[i] * src_stride[i]:
/// size-1 axes dropped and adjacent axes merged where the source is contiguous across them; kCopy
/// when the view is one contiguous run, kGather otherwise (GatherOffset gives each element's source).
PC_TENSOR_HD inline TransposePlan MakeStridedPlan(const int64_t* out_dims, const int64_t* src_stride, int rank) {
  TransposePlan plan;
  int64_t n = 1;
  for (int a = 0; a < rank; ++a) n *= out_dims[a];
  plan.n = n;
  int r = 0;
  for (int a = 0; a < rank; ++a) {
    if (out_dims[a] == 1) continue;
    if (r > 0 && plan.src_stride[r - 1] == src_stride[a] * out_dims[a]) {
      plan.out_dims[r - 1] *= out_dims[a];
      plan.src_stride[r - 1] = src_stride[a];
      continue;
    }
    plan.out_dims[r] = out_dims[a];
    plan.src_stride[r] = src_stride[a];
    ++r;
  }
  plan.rank = r;
  plan.kind = (n == 0 || r == 0 || (r == 1 && plan.src_stride[0] == 1)) ? TransposeKind::kCopy : TransposeKind::kGather;
  return plan;
}

// ---- concat / split ---------------------------------------------------------------------------

/// Parts moved by one launch; more parts take several launches.
inline constexpr int kMaxParts = 48;

/// The parts of a concat or split seen as [outer, whole_row] units (a unit = the copy unit's bytes):
/// part i fills columns [offset[i], offset[i + 1]) of every row of the whole. ptr[i] is the part's
/// data (null when skipped: an @EMPTY@ gradient or output). Columns [offset[0], offset[count]) of
/// the whole are covered; a launch handles parts first..first+count-1 of the op.
struct PartTable {
  int count = 0;
  int64_t offset[kMaxParts + 1] = {};
  void* ptr[kMaxParts] = {};
};

/// The part holding column c, for offset[0] <= c < offset[count]: the last i with offset[i] <= c
/// (empty parts, offset[i] == offset[i + 1], are never returned for a column they do not hold).
PC_TENSOR_HD inline int FindPart(const PartTable& t, int64_t c) {
  int lo = 0, hi = t.count - 1;  // invariant: offset[lo] <= c < offset[hi + 1]
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (t.offset[mid] <= c)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// The largest unit of 16, 8, 4, 2 or 1 bytes dividing `bits`, the OR of every byte count and
/// address a move touches (so a unit divides all of them).
PC_TENSOR_HD inline int CopyUnit(uint64_t bits) {
  for (int u = 16; u > 1; u /= 2)
    if (bits % static_cast<uint64_t>(u) == 0) return u;
  return 1;
}

// ---- top_k_v2 ---------------------------------------------------------------------------------

/// NaN test that also compiles for integer T (where it is always false).
template <class T>
PC_TENSOR_HD inline bool IsNan(T v) {
  return v != v;
}

/// top_k_v2's order on values: a ranks before b when greater (largest) or smaller (!largest), NaN
/// ranking above every number (first when largest, last otherwise), as the CPU kernel's Before().
template <class T>
PC_TENSOR_HD inline bool ValueBefore(T a, T b, bool largest) {
  const bool an = IsNan(a), bn = IsNan(b);
  if (an || bn) return largest ? (an && !bn) : (!an && bn);
  return largest ? a > b : a < b;
}

/// The total order the selection uses: by value, ties (and NaNs among themselves) by lower index.
template <class T>
PC_TENSOR_HD inline bool RankBefore(T a, int64_t ia, T b, int64_t ib, bool largest) {
  if (ValueBefore(a, b, largest)) return true;
  if (ValueBefore(b, a, largest)) return false;
  return ia < ib;
}

/// [outer, n, inner] coordinates of a line: line = o * inner + i starts at o * n * inner + i.
PC_TENSOR_HD inline int64_t LineBase(int64_t line, int64_t n, int64_t inner) {
  return (line / inner) * n * inner + line % inner;
}

}  // namespace paddlec::ops::tensor_index
