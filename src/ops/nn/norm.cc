// batch_norm (and sync_batch_norm, its data-parallel twin) and layer_norm with their gradients,
// following PaddlePaddle's CPU kernels.
//
// batch_norm (training): per channel, mean and the biased variance over N and the spatial dims;
// Y = (X - mean) / sqrt(var + eps) * Scale + Bias; the running statistics (MeanOut / VarianceOut,
// normally the same variables as Mean / Variance) become momentum * running + (1 - momentum) * batch,
// using the biased batch variance as PaddlePaddle does. SavedMean / SavedVariance hold the batch mean
// and the inverse standard deviation 1 / sqrt(var + eps). In test mode (is_test without
// trainable_statistics, or use_global_stats) the running statistics normalize, and SavedMean /
// SavedVariance hold them (mean and inverse std) so that batch_norm_grad needs no other inputs.
//
// Every reduction (per channel, per row, per column) runs in a fixed order on one thread, so results
// do not depend on the thread count.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/cpu_kernels.h"
#include "nn/conv_onednn.h"
#include "nn/nn.h"
#include "nn/norm_slots.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/runtime/comm.h"

namespace paddlec::ops {
namespace {

using namespace norm;  // NOLINT: the family's shared slots and attributes

/// X viewed as [outer, C, inner]: NCHW gives [N, C, H*W...], NHWC and 2-D inputs give [N*H*W..., C, 1].
/// With `block` (oneDNN's nChw8c or nChw16c, conv_onednn.h), channels come in groups of `block`:
/// [N, C / block, H*W..., block].
struct ChannelView {
  int64_t outer, c, inner;
  int block = 0;
  int64_t per_channel() const { return outer * inner; }
};

ChannelView ViewChannels(const Dims& x, bool channel_last, bool blocked = false) {
  if (channel_last || x.rank() == 2) return {x.Product(0, x.rank() - 1), x[x.rank() - 1], 1};
  return {x[0], x[1], x.Product(2, x.rank()), blocked ? nn::ActivationBlockChannels() : 0};
}

/// The blocked layout is for float32 NCHW activations of rank 4 and a multiple of the block's
/// channels (the layout pass blocks nothing else).
Status CheckBlocked(const BatchNormAttrs& a, const Dims& x, bool is_float) {
  if (!a.blocked) return Status::OK();
  if (!is_float) return MakeError(ErrorCode::kUnimplemented, "the blocked layout (attribute 'blocked') needs float32");
  if (a.channel_last || x.rank() != 4 || x[1] % nn::ActivationBlockChannels() != 0)
    return MakeError(ErrorCode::kInvalidArgument,
                     "the blocked layout (attribute 'blocked') needs NCHW X of rank 4 with a multiple of {} channels, "
                     "but X has shape {} ({})",
                     nn::ActivationBlockChannels(), x.ToString(), a.channel_last ? "NHWC" : "NCHW");
  return Status::OK();
}

Status InferBatchNorm(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kBnX);
  if (x.rank() < 2 || x.rank() > 5)
    return ctx.Fail("X has shape {} (rank {}) but batch_norm needs rank 2 to 5 ([N, C] or [N, C, spatial...])",
                    x.ToString(), x.rank());
  if (ctx.Attr<bool>("fuse_with_relu"))
    return MakeError(ErrorCode::kUnimplemented,
                     "attribute 'fuse_with_relu' = true asks for a fused oneDNN kernel, which paddlec does not "
                     "implement; apply relu as a separate op");
  bool channel_last = ctx.Attr<std::string>("data_layout") == "NHWC";
  int axis = channel_last ? x.rank() - 1 : 1;
  int64_t c = x[axis];
  for (InSlot s : {kBnScale, kBnBias, kBnMean, kBnVariance}) {
    Dims d = ctx.InputDims(s);
    if (d.rank() != 1 || !DimMatch(d[0], c))
      return ctx.Fail("{} has shape {} but X has shape {} with {} channels (axis {}, data_layout {}): {} must be [{}]",
                      s.name, d.ToString(), x.ToString(), c, axis, channel_last ? "NHWC" : "NCHW", s.name, c);
    c = DimMerge(c, d[0]);
    if (ctx.InputDType(s) != ctx.InputDType(kBnX))
      return ctx.Fail("{} is {} but X is {}: batch_norm needs both of one dtype", s.name, DTypeName(ctx.InputDType(s)),
                      DTypeName(ctx.InputDType(kBnX)));
  }
  if (ctx.HasInput(kBnMomentum) && ctx.InputDims(kBnMomentum).Numel() != 1 && ctx.InputDims(kBnMomentum).Numel() >= 0)
    return ctx.Fail("MomentumTensor has shape {} but must hold one value", ctx.InputDims(kBnMomentum).ToString());
  DType stat = ctx.InputDType(kBnMean);
  ctx.ShareDims(kBnX, kBnY);
  for (OutSlot s : {kBnMeanOut, kBnVarianceOut, kBnSavedMean, kBnSavedVariance}) ctx.SetOutput(s, Dims{c}, stat);
  return Status::OK();
}

Status InferBatchNormGrad(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kBnGX), dy = ctx.InputDims(kBnGDY);
  if (!DimsMatch(x, dy))
    return ctx.Fail("Y@GRAD has shape {} but X has shape {}: they must match", dy.ToString(), x.ToString());
  ctx.ShareDims(kBnGX, kBnGDX);
  ctx.ShareDims(kBnGScale, kBnGDScale);
  ctx.ShareDims(kBnGBias, kBnGDBias);
  return Status::OK();
}

/// Calls fn(c0, c1) over channel ranges split across the CPU pool; `work` is the elements per channel.
template <class F>
void ForChannels(const ChannelView& v, F&& fn) {
  ParallelFor(v.c, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(v.per_channel(), 1)), fn);
}

/// kN sums over one image's plane of a channel group (`inner` pixels of kBlock lanes): out[j][l] =
/// the sum over pixels p of term(p, l)[j], as four partial sums per lane (vector adds across the
/// lanes) added as (0 + 1) + (2 + 3). Every blocked reduction below sums in this order.
template <int kBlock, int kN, class T, class Term>
inline void PlaneSums(int64_t inner, Term&& term, T (&out)[kN][kBlock]) {
  T acc[kN][4][kBlock] = {};
  int64_t p = 0;
  for (; p + 4 <= inner; p += 4)
    for (int u = 0; u < 4; ++u)
      for (int l = 0; l < kBlock; ++l) {
        const std::array<T, kN> t = term(p + u, l);
        for (int j = 0; j < kN; ++j) acc[j][u][l] += t[j];
      }
  for (; p < inner; ++p)
    for (int l = 0; l < kBlock; ++l) {
      const std::array<T, kN> t = term(p, l);
      for (int j = 0; j < kN; ++j) acc[j][0][l] += t[j];
    }
  for (int j = 0; j < kN; ++j)
    for (int l = 0; l < kBlock; ++l) out[j][l] = (acc[j][0][l] + acc[j][1][l]) + (acc[j][2][l] + acc[j][3][l]);
}

/// How the blocked reductions split a view into tasks: runs of `per` images of one channel group,
/// enough planes for kElementwiseGrain elements, `runs` of them per group; `grain` tasks at least
/// per thread, so that a view of fewer than 2 x kElementwiseGrain elements stays on the calling
/// thread. The split depends on the shape alone, so the order of additions does not depend on the
/// thread count. Splitting the images as well as the groups matters because a layer has few groups
/// (one for 16 channels under AVX-512): split over groups only, a ResNet stage of 16 channels took
/// its statistics on one thread, and beside busy processes a thread that a busy process held kept
/// the other waiting for a whole scheduler slice.
struct ImageRuns {
  int64_t outer, per, runs, grain;
  int64_t begin(int64_t r) const { return r * per; }
  int64_t end(int64_t r) const { return std::min(outer, (r + 1) * per); }
  /// Calls fn(task, group, run) for each of `groups` x `runs` tasks on the CPU pool; task indexes
  /// the tasks group by group.
  template <class F>
  void ForEach(int64_t groups, F&& fn) const {
    ParallelFor(groups * runs, grain, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) fn(t, t / runs, t % runs);
    });
  }
};

inline ImageRuns SplitImages(const ChannelView& v, int block) {
  const int64_t plane = std::max<int64_t>(v.inner * block, 1);
  const int64_t per = std::clamp<int64_t>(kElementwiseGrain / plane, 1, std::max<int64_t>(v.outer, 1));
  return {v.outer, per, (v.outer + per - 1) / per, std::max<int64_t>(1, kElementwiseGrain / (per * plane))};
}

/// ChannelSums over a blocked view, kN sums at once: f(i, c) returns element i's kN terms. Per group
/// of kBlock channels, each image's PlaneSums added in image order within a run of images (one task,
/// SplitImages), and the runs' totals added in run order.
template <int kBlock, int kN, class T, class F>
void BlockedChannelSums(const ChannelView& v, std::array<T*, kN> sums, F&& f) {
  const int64_t groups = v.c / kBlock;
  const ImageRuns split = SplitImages(v, kBlock);
  std::vector<T> partial(static_cast<size_t>(groups * split.runs * kN * kBlock));  // [group][run][j][lane]
  split.ForEach(groups, [&](int64_t t, int64_t g, int64_t r) {
    const int64_t c0 = g * kBlock;
    T total[kN][kBlock] = {};
    for (int64_t o = split.begin(r); o < split.end(r); ++o) {
      const int64_t base = (o * groups + g) * v.inner * kBlock;
      T plane[kN][kBlock];
      PlaneSums<kBlock, kN>(v.inner, [&](int64_t p, int l) { return f(base + p * kBlock + l, c0 + l); }, plane);
      for (int j = 0; j < kN; ++j)
        for (int l = 0; l < kBlock; ++l) total[j][l] += plane[j][l];
    }
    std::copy(&total[0][0], &total[0][0] + kN * kBlock, partial.data() + t * kN * kBlock);
  });
  for (int64_t g = 0; g < groups; ++g)
    for (int j = 0; j < kN; ++j)
      for (int l = 0; l < kBlock; ++l) {
        T s = 0;
        for (int64_t r = 0; r < split.runs; ++r)
          s += partial[static_cast<size_t>(((g * split.runs + r) * kN + j) * kBlock + l)];
        sums[j][g * kBlock + l] = s;
      }
}

/// Merges a set of n values with mean `mu_b` and squared deviations `m2_b` into a running set of
/// `seen` values (mean `mu`, squared deviations `m2`): Chan et al.'s pairwise update.
template <class T>
inline void MergeMoments(T& mu, T& m2, T seen, T mu_b, T m2_b, T n) {
  const T total = seen + n, delta = mu_b - mu;
  mu += delta * (n / total);
  m2 += m2_b + delta * delta * (seen * n / total);
}

/// Each channel's mean and sum of squared deviations from it over a blocked view, in one pass over
/// X: an image's plane of a channel group (in L1 or L2) is summed and then its squared deviations
/// from its own mean taken, the planes are merged in image order within a run of images (one
/// task, SplitImages), and the runs in run order, by Chan et al.'s pairwise update, as stable as
/// deviations from the global mean. The two-pass form read X from memory twice: LeNet's first
/// activation (6.4 MB at batch 64) does not fit L2.
template <int kBlock, class T>
void BlockedMeanAndSquares(const ChannelView& v, const T* x, T* mean, T* squares) {
  const int64_t groups = v.c / kBlock, inner = v.inner;
  const ImageRuns split = SplitImages(v, kBlock);
  std::vector<T> partial(static_cast<size_t>(groups * split.runs * 2 * kBlock));  // [group][run][mean, m2][lane]
  split.ForEach(groups, [&](int64_t t, int64_t g, int64_t r) {
    T mu[kBlock] = {}, m2[kBlock] = {};
    T seen = 0;
    for (int64_t o = split.begin(r); o < split.end(r); ++o) {
      const T* xo = x + (o * groups + g) * inner * kBlock;
      T sum[1][kBlock], dev[1][kBlock], plane_mean[kBlock];
      PlaneSums<kBlock, 1>(inner, [&](int64_t p, int l) { return std::array<T, 1>{xo[p * kBlock + l]}; }, sum);
      for (int l = 0; l < kBlock; ++l) plane_mean[l] = sum[0][l] / static_cast<T>(inner);
      PlaneSums<kBlock, 1>(
          inner,
          [&](int64_t p, int l) {
            const T d = xo[p * kBlock + l] - plane_mean[l];
            return std::array<T, 1>{d * d};
          },
          dev);
      for (int l = 0; l < kBlock; ++l) MergeMoments(mu[l], m2[l], seen, plane_mean[l], dev[0][l], T(inner));
      seen += static_cast<T>(inner);
    }
    T* out = partial.data() + t * 2 * kBlock;
    std::copy(mu, mu + kBlock, out);
    std::copy(m2, m2 + kBlock, out + kBlock);
  });
  for (int64_t g = 0; g < groups; ++g)
    for (int l = 0; l < kBlock; ++l) {
      T mu = 0, m2 = 0, seen = 0;
      for (int64_t r = 0; r < split.runs; ++r) {
        const T* run = partial.data() + (g * split.runs + r) * 2 * kBlock;
        const T n = static_cast<T>((split.end(r) - split.begin(r)) * inner);
        MergeMoments(mu, m2, seen, run[l], run[kBlock + l], n);
        seen += n;
      }
      mean[g * kBlock + l] = mu;
      squares[g * kBlock + l] = m2;
    }
}

/// MapChannels over a blocked view, parallel over (image, channel group) planes.
template <int kBlock, class F>
void BlockedMapChannels(const ChannelView& v, F&& f) {
  const int64_t groups = v.c / kBlock;
  ParallelFor(v.outer * groups, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(v.inner * kBlock, 1)),
              [&](int64_t q0, int64_t q1) {
                for (int64_t q = q0; q < q1; ++q) {
                  const int64_t base = q * v.inner * kBlock, c0 = q % groups * kBlock;
                  for (int64_t p = 0; p < v.inner; ++p)
                    for (int l = 0; l < kBlock; ++l) f(base + p * kBlock + l, c0 + l);
                }
              });
}

/// sums[j][c] = the sum over channel c of f(i, c)[j] (element-wise form, used when channels are the
/// innermost dimension) or of plane(base, len, c)[j] over each contiguous run of the channel (the
/// NCHW form: Eigen reductions the compiler vectorizes), kN sums in one pass over the data. Fixed
/// order, so results do not depend on threads, nor on which sums are taken together.
template <int kN, class T, class F, class Plane>
void ChannelSums(const ChannelView& v, std::array<T*, kN> sums, F&& f, Plane&& plane) {
  if (v.block == 8) return BlockedChannelSums<8, kN>(v, sums, f);
  if (v.block == 16) return BlockedChannelSums<16, kN>(v, sums, f);
  ForChannels(v, [&](int64_t c0, int64_t c1) {
    for (int j = 0; j < kN; ++j) std::fill(sums[j] + c0, sums[j] + c1, T(0));
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t c = c0; c < c1; ++c) {
        const std::array<T, kN> t = v.inner == 1 ? f(o * v.c + c, c) : plane((o * v.c + c) * v.inner, v.inner, c);
        for (int j = 0; j < kN; ++j) sums[j][c] += t[j];
      }
    }
  });
}

/// The one-sum form: f and plane return T.
template <class T, class F, class Plane>
void ChannelSums(const ChannelView& v, T* sums, F&& f, Plane&& plane) {
  ChannelSums<1>(
      v, std::array<T*, 1>{sums}, [&](int64_t i, int64_t c) { return std::array<T, 1>{f(i, c)}; },
      [&](int64_t base, int64_t n, int64_t c) { return std::array<T, 1>{plane(base, n, c)}; });
}

/// Writes every element: f(i, c) per element when channels are innermost, else plane(base, len, c)
/// per contiguous run of one channel. Parallel over rows or planes.
template <class F, class Plane>
void MapChannels(const ChannelView& v, F&& f, Plane&& plane) {
  if (v.block == 8) return BlockedMapChannels<8>(v, f);
  if (v.block == 16) return BlockedMapChannels<16>(v, f);
  if (v.inner == 1) {
    ParallelFor(v.outer, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(v.c, 1)), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t c = 0; c < v.c; ++c) f(o * v.c + c, c);
    });
    return;
  }
  ParallelFor(v.outer * v.c, std::max<int64_t>(1, kElementwiseGrain / v.inner), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) plane(p * v.inner, v.inner, p % v.c);
  });
}

template <class T>
T ReadScalar(const Tensor& t) {
  if (t.dtype() == DType::kFloat64) return static_cast<T>(t.data<double>()[0]);
  return static_cast<T>(t.data<float>()[0]);
}

/// In place, buf[i] = the sum over the ranks of the process's communicator of buf[i] (sync_batch_norm).
template <class T>
Status SumOverRanks(T* buf, int64_t n) {
  PC_ASSIGN_OR_RETURN(runtime::Communicator * comm, runtime::WorldCommunicator());
  return comm->AllReduce(buf, n, DTypeOf<T>(), runtime::ReduceOp::kSum);
}

/// batch_norm, and with kSync sync_batch_norm: the batch statistics of training are those of the
/// global batch, every rank's per-channel sums (and element counts) summed over the ranks. With one
/// rank both compute the same values in the same order.
template <class T, bool kSync>
class BatchNormKernel final : public OpKernel {
 public:
  explicit BatchNormKernel(const KernelInit& init) : attrs_(BatchNormAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& xt = ctx.In(kBnX);
    ChannelView v = ViewChannels(xt.dims(), attrs_.channel_last, attrs_.blocked);
    PC_RETURN_IF_ERROR(CheckBlocked(attrs_, xt.dims(), std::is_same_v<T, float>));
    const T* x = xt.data<T>();
    const T* scale = ctx.In(kBnScale).data<T>();
    const T* bias = ctx.In(kBnBias).data<T>();
    const T* mean = ctx.In(kBnMean).data<T>();
    const T* var = ctx.In(kBnVariance).data<T>();
    T* y = ctx.Out(kBnY).data<T>();
    T* mean_out = ctx.Out(kBnMeanOut).data<T>();
    T* var_out = ctx.Out(kBnVarianceOut).data<T>();
    const T eps = static_cast<T>(attrs_.epsilon);
    const int64_t c = v.c, m = v.per_channel();
    // SavedMean / SavedVariance are intermediate outputs a program may leave out.
    T* saved_mean = OutOrScratch(ctx, kBnSavedMean, saved_mean_, c);
    T* saved_inv_std = OutOrScratch(ctx, kBnSavedVariance, saved_inv_std_, c);

    if (attrs_.global_stats) {
      if (mean_out != mean) std::copy(mean, mean + c, mean_out);
      if (var_out != var) std::copy(var, var + c, var_out);
      for (int64_t k = 0; k < c; ++k) {
        saved_mean[k] = mean[k];
        saved_inv_std[k] = T(1) / std::sqrt(var[k] + eps);
      }
    } else {
      T count = static_cast<T>(m);
      // Blocked (the training layout at -O2): the mean and the squared deviations in one pass.
      const bool one_pass = !kSync && m > 1 && (v.block == 8 || v.block == 16);
      if (one_pass && v.block == 8) BlockedMeanAndSquares<8>(v, x, saved_mean, saved_inv_std);
      if (one_pass && v.block == 16) BlockedMeanAndSquares<16>(v, x, saved_mean, saved_inv_std);
      if (!one_pass) PC_RETURN_IF_ERROR(TwoPassStatistics(v, x, saved_mean, saved_inv_std, count));
      if (count == 1) {
        // PaddlePaddle's special case: one value per channel is passed through unnormalized and the
        // running statistics stay as they are.
        if (mean_out != mean) std::copy(mean, mean + c, mean_out);
        if (var_out != var) std::copy(var, var + c, var_out);
        std::fill(saved_mean, saved_mean + c, T(0));
        std::fill(saved_inv_std, saved_inv_std + c, T(0));
        std::copy(x, x + xt.numel(), y);
        return Status::OK();
      }
      T momentum = ctx.InOpt(kBnMomentum) ? ReadScalar<T>(*ctx.InOpt(kBnMomentum)) : static_cast<T>(attrs_.momentum);
      for (int64_t k = 0; k < c; ++k) {
        T batch_var = saved_inv_std[k] / count;
        mean_out[k] = mean[k] * momentum + saved_mean[k] * (T(1) - momentum);
        var_out[k] = var[k] * momentum + batch_var * (T(1) - momentum);
        saved_inv_std[k] = T(1) / std::sqrt(batch_var + eps);
      }
    }
    // Y = X * (Scale * inv_std) + (Bias - mean * Scale * inv_std).
    a_.resize(c);
    b_.resize(c);
    for (int64_t k = 0; k < c; ++k) {
      a_[k] = scale[k] * saved_inv_std[k];
      b_[k] = bias[k] - saved_mean[k] * a_[k];
    }
    const T* a = a_.data();
    const T* b = b_.data();
    MapChannels(
        v, [&](int64_t i, int64_t k) { y[i] = x[i] * a[k] + b[k]; },
        [&](int64_t base, int64_t n, int64_t k) { MutEigenVec<T>(y + base, n) = ConstEigenVec<T>(x + base, n) * a[k] + b[k]; });
    return Status::OK();
  }

 private:
  /// mean[c] = channel c's mean over the batch, squares[c] = the sum of its squared deviations from
  /// it (not E[x^2] - mean^2, which cancels catastrophically when |mean| >> std), each a pass over X;
  /// with SyncBN over the global batch, whose element count `count` becomes. A count of 1 leaves
  /// both undefined.
  Status TwoPassStatistics(const ChannelView& v, const T* x, T* mean, T* squares, T& count) {
    const int64_t c = v.c;
    ChannelSums(
        v, mean, [&](int64_t i, int64_t) { return x[i]; },
        [&](int64_t base, int64_t n, int64_t) { return ConstEigenVec<T>(x + base, n).sum(); });
    if constexpr (kSync) PC_RETURN_IF_ERROR(SumWithCount(mean, c, count));
    if (count == 1) return Status::OK();
    for (int64_t k = 0; k < c; ++k) mean[k] /= count;
    ChannelSums(
        v, squares,
        [&](int64_t i, int64_t k) {
          T d = x[i] - mean[k];
          return d * d;
        },
        [&](int64_t base, int64_t n, int64_t k) { return (ConstEigenVec<T>(x + base, n) - mean[k]).square().sum(); });
    if constexpr (kSync) PC_RETURN_IF_ERROR(SumOverRanks(squares, c));
    return Status::OK();
  }

  static T* OutOrScratch(KernelContext& ctx, OutSlot slot, std::vector<T>& scratch, int64_t c) {
    if (Tensor* t = ctx.OutOpt(slot)) return t->data<T>();
    scratch.resize(c);
    return scratch.data();
  }

  /// sums[0, c) and count summed over the ranks in one collective.
  Status SumWithCount(T* sums, int64_t c, T& count) {
    reduce_.assign(sums, sums + c);
    reduce_.push_back(count);
    PC_RETURN_IF_ERROR(SumOverRanks(reduce_.data(), c + 1));
    std::copy(reduce_.begin(), reduce_.begin() + c, sums);
    count = reduce_[c];
    return Status::OK();
  }

  BatchNormAttrs attrs_;
  std::vector<T> a_, b_;                       // per-channel affine map, sized once per channel count
  std::vector<T> saved_mean_, saved_inv_std_;  // stand-ins for absent SavedMean / SavedVariance
  std::vector<T> reduce_;                      // sync_batch_norm: the sums and count being reduced
};

/// batch_norm_grad, and with kSync sync_batch_norm_grad: X@GRAD depends on every rank's Y@GRAD
/// through the global statistics, so the per-channel sums of dY and dY * (X - mean) are summed over
/// the ranks for it; Scale@GRAD and Bias@GRAD stay this rank's part (the data-parallel gradient
/// allreduce sums them, as every other parameter gradient).
template <class T, bool kSync>
class BatchNormGradKernel final : public OpKernel {
 public:
  explicit BatchNormGradKernel(const KernelInit& init) : attrs_(BatchNormAttrs::Decode(init.attrs)) {}

  Status Run(KernelContext& ctx) override {
    const Tensor& xt = ctx.In(kBnGX);
    ChannelView v = ViewChannels(xt.dims(), attrs_.channel_last, attrs_.blocked);
    PC_RETURN_IF_ERROR(CheckBlocked(attrs_, xt.dims(), std::is_same_v<T, float>));
    const T* x = xt.data<T>();
    const T* scale = ctx.In(kBnGScale).data<T>();
    const T* mean = ctx.In(kBnGSavedMean).data<T>();
    const T* inv_std = ctx.In(kBnGSavedVariance).data<T>();
    const T* dy = ctx.In(kBnGDY).data<T>();
    Tensor* dx = ctx.OutOpt(kBnGDX);
    Tensor* dscale_t = ctx.OutOpt(kBnGDScale);
    Tensor* dbias_t = ctx.OutOpt(kBnGDBias);
    const int64_t c = v.c, m = v.per_channel();

    auto pass_through = [&] {  // the forward passed X through
      if (dx) std::copy(dy, dy + xt.numel(), dx->data<T>());
      if (dscale_t) std::fill(dscale_t->data<T>(), dscale_t->data<T>() + c, T(0));
      if (dbias_t) std::fill(dbias_t->data<T>(), dbias_t->data<T>() + c, T(0));
      return Status::OK();
    };
    if (!kSync && !attrs_.global_stats && m == 1) return pass_through();
    dbias_.resize(c);
    dscale_.resize(c);
    T* dbias = dbias_.data();
    T* dscale = dscale_.data();
    // Both sums in one pass over dY and X (the tensors are larger than L2 in LeNet's training).
    ChannelSums<2>(
        v, std::array<T*, 2>{dbias, dscale},
        [&](int64_t i, int64_t k) {
          return std::array<T, 2>{dy[i], dy[i] * (x[i] - mean[k])};
        },
        [&](int64_t base, int64_t n, int64_t k) {
          const auto d = ConstEigenVec<T>(dy + base, n);
          return std::array<T, 2>{d.sum(), (d * (ConstEigenVec<T>(x + base, n) - mean[k])).sum()};
        });
    for (int64_t k = 0; k < c; ++k) dscale[k] *= inv_std[k];
    // The sums X@GRAD uses: this rank's, or with SyncBN (in training) the global batch's.
    const T* sum_dy = dbias;
    const T* sum_dy_xhat = dscale;
    T count = static_cast<T>(m);
    if constexpr (kSync) {
      if (!attrs_.global_stats) {
        reduce_.assign(dbias, dbias + c);
        reduce_.insert(reduce_.end(), dscale, dscale + c);
        reduce_.push_back(count);
        PC_RETURN_IF_ERROR(SumOverRanks(reduce_.data(), 2 * c + 1));
        count = reduce_[2 * c];
        if (count == 1) return pass_through();
        sum_dy = reduce_.data();
        sum_dy_xhat = reduce_.data() + c;
      }
    }
    if (dx) {
      T* g = dx->data<T>();
      if (attrs_.global_stats) {
        MapChannels(
            v, [&](int64_t i, int64_t k) { g[i] = dy[i] * scale[k] * inv_std[k]; },
            [&](int64_t base, int64_t n, int64_t k) {
              MutEigenVec<T>(g + base, n) = ConstEigenVec<T>(dy + base, n) * (scale[k] * inv_std[k]);
            });
      } else {
        // dX = Scale * inv_std / M * (M * dY - sum(dY) - xhat * sum(dY * xhat)).
        const T inv_m = T(1) / count;
        MapChannels(
            v,
            [&](int64_t i, int64_t k) {
              T xhat = (x[i] - mean[k]) * inv_std[k];
              g[i] = scale[k] * inv_std[k] * (dy[i] - (sum_dy[k] + xhat * sum_dy_xhat[k]) * inv_m);
            },
            [&](int64_t base, int64_t n, int64_t k) {
              // g = s * (dy - dbias/M - (x - mean) * inv_std * dscale / M), with s = scale * inv_std
              // (dscale already carries one factor of inv_std).
              const T s = scale[k] * inv_std[k], shift = sum_dy[k] * inv_m, slope = inv_std[k] * sum_dy_xhat[k] * inv_m;
              MutEigenVec<T>(g + base, n) =
                  s * (ConstEigenVec<T>(dy + base, n) - shift - (ConstEigenVec<T>(x + base, n) - mean[k]) * slope);
            });
      }
    }
    if (dscale_t) std::copy(dscale, dscale + c, dscale_t->data<T>());
    if (dbias_t) std::copy(dbias, dbias + c, dbias_t->data<T>());
    return Status::OK();
  }

 private:
  BatchNormAttrs attrs_;
  std::vector<T> dbias_, dscale_;
  std::vector<T> reduce_;  // sync_batch_norm_grad: both sums and the count being reduced
};

// ---- layer_norm -----------------------------------------------------------------------------

/// Checks X against begin_norm_axis and Scale/Bias against the normalized size; returns [left, right].
Status LayerNormView(InferShapeContext& ctx, int64_t* left, int64_t* right) {
  Dims x = ctx.InputDims(kLnX);
  int axis = ctx.Attr<int>("begin_norm_axis");
  if (axis >= x.rank())
    return ctx.Fail("begin_norm_axis {} is out of range for X of shape {} (rank {}): it must be in [1, {}]", axis,
                    x.ToString(), x.rank(), x.rank() - 1);
  *left = x.Product(0, axis);
  *right = x.Product(axis, x.rank());
  for (InSlot s : {kLnScale, kLnBias}) {
    if (!ctx.HasInput(s)) continue;
    Dims d = ctx.InputDims(s);
    if (d.rank() != 1 || !DimMatch(d[0], *right))
      return ctx.Fail("{} has shape {} but X has shape {}, normalized from axis {} over {} elements: {} must be [{}]",
                      s.name, d.ToString(), x.ToString(), axis, *right, s.name, *right);
    if (ctx.InputDType(s) != ctx.InputDType(kLnX))
      return ctx.Fail("{} is {} but X is {}: layer_norm needs both of one dtype", s.name, DTypeName(ctx.InputDType(s)),
                      DTypeName(ctx.InputDType(kLnX)));
  }
  return Status::OK();
}

Status InferLayerNorm(InferShapeContext& ctx) {
  int64_t left, right;
  PC_RETURN_IF_ERROR(LayerNormView(ctx, &left, &right));
  ctx.ShareDims(kLnX, kLnY);
  // PaddlePaddle's shape for the statistics: X's leading dims, x.shape[:begin_norm_axis].
  Dims x = ctx.InputDims(kLnX), stats;
  for (int d = 0; d < ctx.Attr<int>("begin_norm_axis"); ++d) stats.push_back(x[d]);
  ctx.SetOutput(kLnMean, stats, ctx.InputDType(kLnX));
  ctx.SetOutput(kLnVariance, stats, ctx.InputDType(kLnX));
  return Status::OK();
}

Status InferLayerNormGrad(InferShapeContext& ctx) {
  int64_t left, right;
  PC_RETURN_IF_ERROR(LayerNormView(ctx, &left, &right));
  Dims x = ctx.InputDims(kLnX), dy = ctx.InputDims(kLnGDY);
  if (!DimsMatch(x, dy))
    return ctx.Fail("Y@GRAD has shape {} but X has shape {}: they must match", dy.ToString(), x.ToString());
  ctx.ShareDims(kLnX, kLnGDX);
  ctx.ShareDims(kLnScale, kLnGDScale);
  ctx.ShareDims(kLnBias, kLnGDBias);
  return Status::OK();
}

/// Rows split across the CPU pool, `width` elements each.
template <class F>
void ForRows(int64_t rows, int64_t width, F&& fn) {
  ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(width, 1)), fn);
}

template <class T>
Status LayerNormCpu(KernelContext& ctx, const LayerNormAttrs& attrs) {
  const Tensor& xt = ctx.In(kLnX);
  const int64_t left = xt.dims().Product(0, attrs.begin_norm_axis), right = xt.numel() / std::max<int64_t>(left, 1);
  const T* x = xt.data<T>();
  const T* scale = ctx.InOpt(kLnScale) ? ctx.InOpt(kLnScale)->data<T>() : nullptr;
  const T* bias = ctx.InOpt(kLnBias) ? ctx.InOpt(kLnBias)->data<T>() : nullptr;
  T* y = ctx.Out(kLnY).data<T>();
  T* mean_out = ctx.OutOpt(kLnMean) ? ctx.OutOpt(kLnMean)->data<T>() : nullptr;
  T* var_out = ctx.OutOpt(kLnVariance) ? ctx.OutOpt(kLnVariance)->data<T>() : nullptr;
  const T eps = static_cast<T>(attrs.epsilon);
  ForRows(left, right, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      ConstEigenVec<T> xr(x + r * right, right);
      MutEigenVec<T> yr(y + r * right, right);
      T mean = xr.sum() / static_cast<T>(right);
      T var = (xr - mean).square().sum() / static_cast<T>(right);
      T inv_std = T(1) / std::sqrt(var + eps);
      yr = (xr - mean) * inv_std;
      if (scale) yr *= ConstEigenVec<T>(scale, right);
      if (bias) yr += ConstEigenVec<T>(bias, right);
      if (mean_out) mean_out[r] = mean;
      if (var_out) var_out[r] = var;
    }
  });
  return Status::OK();
}

template <class T>
Status LayerNormGradCpu(KernelContext& ctx, const LayerNormAttrs& attrs) {
  const Tensor& xt = ctx.In(kLnX);
  const int64_t left = xt.dims().Product(0, attrs.begin_norm_axis), right = xt.numel() / std::max<int64_t>(left, 1);
  const T* x = xt.data<T>();
  const T* scale = ctx.InOpt(kLnScale) ? ctx.InOpt(kLnScale)->data<T>() : nullptr;
  const T* mean = ctx.In(kLnGMean).data<T>();
  const T* var = ctx.In(kLnGVariance).data<T>();
  const T* dy = ctx.In(kLnGDY).data<T>();
  Tensor* dx = ctx.OutOpt(kLnGDX);
  Tensor* dscale = ctx.OutOpt(kLnGDScale);
  Tensor* dbias = ctx.OutOpt(kLnGDBias);
  const T eps = static_cast<T>(attrs.epsilon);
  auto inv_std = [&](int64_t r) { return T(1) / std::sqrt(var[r] + eps); };

  if (dscale || dbias) {
    // Column sums over the rows, each column range on one thread in row order.
    T* ds = dscale ? dscale->data<T>() : nullptr;
    T* db = dbias ? dbias->data<T>() : nullptr;
    ParallelFor(
        right, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(left, 1)), [&](int64_t j0, int64_t j1) {
          int64_t n = j1 - j0;
          if (ds) std::fill(ds + j0, ds + j1, T(0));
          if (db) std::fill(db + j0, db + j1, T(0));
          for (int64_t r = 0; r < left; ++r) {
            ConstEigenVec<T> dyr(dy + r * right + j0, n);
            if (ds)
              MutEigenVec<T>(ds + j0, n) += dyr * (ConstEigenVec<T>(x + r * right + j0, n) - mean[r]) * inv_std(r);
            if (db) MutEigenVec<T>(db + j0, n) += dyr;
          }
        });
  }
  if (dx) {
    T* g = dx->data<T>();
    ForRows(left, right, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        T is = inv_std(r);
        ConstEigenVec<T> xr(x + r * right, right), dyr(dy + r * right, right);
        MutEigenVec<T> gr(g + r * right, right);
        // gr holds dxhat = dY * Scale, then becomes dX = inv_std * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
        if (scale)
          gr = dyr * ConstEigenVec<T>(scale, right);
        else
          gr = dyr;
        T mean_d = gr.sum() / static_cast<T>(right);
        T mean_dx = (gr * (xr - mean[r])).sum() * is / static_cast<T>(right);
        gr = is * (gr - mean_d - (xr - mean[r]) * is * mean_dx);
      }
    });
  }
  return Status::OK();
}

/// batch_norm and sync_batch_norm share slots, attributes and shape functions; `doc` says what
/// differs.
template <bool kSync>
void AddBatchNorm(OpRegistry& r, const std::string& type, const std::string& doc, const std::string& grad_doc) {
  r.Add(type)
      .Doc(doc)
      .Input(kBnX, "Input [N, C] or [N, C, spatial...] (NCHW), or channels last with data_layout NHWC.")
      .Input(kBnScale, "Per-channel scale [C].")
      .Input(kBnBias, "Per-channel shift [C].")
      .Input(kBnMean, "Running mean [C].")
      .Input(kBnVariance, "Running variance [C].")
      .Input(kBnMomentum, "A one-value tensor overriding the momentum attribute.", kDispensable)
      .Output(kBnY, "Normalized output, shaped like X.")
      .Output(kBnMeanOut, "Updated running mean [C]; the same variable as Mean.")
      .Output(kBnVarianceOut, "Updated running variance [C]; the same variable as Variance.")
      .Output(kBnSavedMean, "Mean used to normalize (the batch mean when training) [C].", kIntermediate)
      .Output(kBnSavedVariance, "Inverse standard deviation used to normalize, 1 / sqrt(var + epsilon) [C].",
              kIntermediate)
      .Output(kBnReserveSpace, "cuDNN workspace; unused on the CPU.", kDispensable | kExtra)
      .Attr("momentum", 0.9f, "Running statistic = momentum * running + (1 - momentum) * batch statistic.")
      .Attr("epsilon", 1e-5f, "Added to the variance before the square root.")
      .Range(0.0, 0.001)
      .Attr("data_layout", "NCHW", "NCHW (channel axis 1) or NHWC (channel axis last); 2-D input is [N, C].")
      .AllowedValues({"NCHW", "NHWC", "AnyLayout"})
      .Attr("is_test", false, "Inference: normalize with the running statistics and leave them unchanged.")
      .Attr("use_global_stats", false, "Normalize with the running statistics, also in training.")
      .Attr("trainable_statistics", false, "With is_test, still use the batch statistics.")
      .Attr("fuse_with_relu", false, "oneDNN fusion request; must be false.")
      .ExtraAttr()
      .Attr("blocked", false,
            "paddlec: X and Y (and in the gradient op their gradients) are in oneDNN's channel-blocked layout "
            "(nChw16c, or nChw8c without AVX-512), set by the layout pass; the float32 CPU kernels honour it, the "
            "GPU kernels keep NCHW throughout.")
      .InferShape(InferBatchNorm)
      .Grad()
      .NoGradInput(kBnMean)
      .NoGradInput(kBnVariance)
      .NoGradInput(kBnMomentum)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<BatchNormKernel<float, kSync>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<BatchNormKernel<double, kSync>>());

  r.Add(type + "_grad")
      .GradOf(type)
      .Doc(grad_doc)
      .Input(kBnGX, "The forward input.")
      .Input(kBnGScale, "The forward Scale.")
      .Input(kBnGBias, "The forward Bias (its shape sizes Bias@GRAD).")
      .Input(kBnGSavedMean, "The forward SavedMean.")
      .Input(kBnGSavedVariance, "The forward SavedVariance (inverse standard deviation).")
      .Input(kBnGDY, "Gradient of the loss with respect to Y.")
      .Input(kBnGMean, "PaddlePaddle's binding of the forward Mean; unused (the saved statistics serve).", kDispensable)
      .Input(kBnGVariance, "PaddlePaddle's binding of the forward Variance; unused.", kDispensable)
      .Input(kBnGReserveSpace, "PaddlePaddle's cuDNN reserve from the forward op; unused.", kDispensable)
      .Input(kBnGMeanOut, "PaddlePaddle's binding of the forward MeanOut; unused.", kDispensable)
      .Input(kBnGVarianceOut, "PaddlePaddle's binding of the forward VarianceOut; unused.", kDispensable)
      .Output(kBnGDX, "Gradient of the loss with respect to X.")
      .Output(kBnGDScale, "Gradient of the loss with respect to Scale.")
      .Output(kBnGDBias, "Gradient of the loss with respect to Bias.")
      .InferShape(InferBatchNormGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernelClass<BatchNormGradKernel<float, kSync>>())
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernelClass<BatchNormGradKernel<double, kSync>>());
}

}  // namespace

void RegisterNormOps(OpRegistry& r) {
  AddBatchNorm<false>(
      r, "batch_norm",
      "Batch normalization over all axes but the channel axis: Y = (X - mean) / sqrt(var + epsilon) * Scale + "
      "Bias per channel, with the batch statistics in training (updating the running ones by momentum) and the "
      "running statistics in test mode.",
      "Gradient of batch_norm, through the batch statistics in training and with them fixed in test mode.");
  AddBatchNorm<true>(
      r, "sync_batch_norm",
      "batch_norm whose training statistics are those of the global batch of all data-parallel ranks: each "
      "rank's per-channel sums (and element counts) are summed over the ranks (Open MPI under mpirun on a "
      "CPU, NCCL on a GPU), so every rank normalizes with the same mean and variance "
      "and updates the same running statistics. In test mode, or with one rank, it is batch_norm.",
      "Gradient of sync_batch_norm: the per-channel sums of Y@GRAD and Y@GRAD * (X - mean) that X@GRAD needs "
      "are summed over the ranks; Scale@GRAD and Bias@GRAD are this rank's part.");

  r.Add("layer_norm")
      .Doc(
          "Layer normalization: X is viewed as [left, right] split at begin_norm_axis; each row is normalized to "
          "zero mean and unit variance, Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias.")
      .Input(kLnX, "Input of rank > begin_norm_axis.")
      .Input(kLnScale, "Scale [right], the product of X's dims from begin_norm_axis on.", kDispensable)
      .Input(kLnBias, "Shift [right].", kDispensable)
      .Output(kLnY, "Normalized output, shaped like X.")
      .Output(kLnMean, "Mean of each row [left].", kIntermediate)
      .Output(kLnVariance, "Biased variance of each row [left].", kIntermediate)
      .Attr("epsilon", 1e-5f, "Added to the variance before the square root.")
      .Range(0.0, 0.001)
      .Attr("begin_norm_axis", 1, "The first axis of the normalized block; the axes before it index the rows.")
      .GreaterThan(0)  // declared as PaddlePaddle declares it: at least one axis indexes the rows
      .Attr("is_test", false, "PaddlePaddle hint: inference only; ignored.")
      .ExtraAttr()
      .InferShape(InferLayerNorm)
      .Grad()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(LayerNormCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(LayerNormCpu<double>));

  r.Add("layer_norm_grad")
      .GradOf("layer_norm")
      .Doc("Gradient of layer_norm.")
      .Input(kLnX, "The forward input.")
      .Input(kLnScale, "The forward Scale.", kDispensable)
      .Input(kLnBias, "The forward Bias (its shape sizes Bias@GRAD).", kDispensable)
      .Input(kLnGMean, "The forward Mean.")
      .Input(kLnGVariance, "The forward Variance.")
      .Input(kLnGDY, "Gradient of the loss with respect to Y.")
      .Output(kLnGDX, "Gradient of the loss with respect to X.")
      .Output(kLnGDScale, "Gradient of the loss with respect to Scale.")
      .Output(kLnGDBias, "Gradient of the loss with respect to Bias.")
      .InferShape(InferLayerNormGrad)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(LayerNormGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(LayerNormGradCpu<double>));
}

}  // namespace paddlec::ops
