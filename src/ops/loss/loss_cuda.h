// Launchers of the loss family's CUDA kernels (loss.cu), in plain types. Every launcher queues work on
// `s` and returns the launch error; none waits for the GPU.
//
// Hard labels (L = int32_t or int64_t) outside [0, classes) that are not ignore_index are never used
// as indices: their loss and gradient entries become NaN, and FindBadLabel reports the first of them
// through `report`, a 2-entry buffer in mapped host memory that the host reads later (loss_cuda.cc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace paddlec::ops::cuda {

/// When some labels[i] (i < count) is bad (loss_index::BadLabel), writes the first such i to
/// report[0] and its value to report[1]; otherwise leaves report untouched. One block.
template <class L>
cudaError_t FindBadLabel(const L* labels, int64_t count, int64_t classes, int64_t ignore_index, int64_t* report,
                         cudaStream_t s);

/// softmax_with_cross_entropy (and cross_entropy: use_softmax false, class axis last, softmax null)
/// over the [outer, n, inner] view of x around the class axis. L: int32_t or int64_t (hard labels, one
/// per line) or T (soft labels, shaped like x). softmax may be null; loss has one entry per line.
template <class T, class L>
cudaError_t SoftmaxCrossEntropy(const T* x, const L* label, T* softmax, T* loss, int64_t outer, int64_t n,
                                int64_t inner, int64_t ignore_index, bool use_softmax, cudaStream_t s);

/// Its gradient from p (the softmax, or the probabilities themselves when use_softmax is false):
/// hard: (p - onehot) * dloss or -dloss / p at the label; soft: (p * sum(label) - label) * dloss or
/// -label * dloss / p (0 where label is 0); 0 on ignored lines.
template <class T, class L>
cudaError_t SoftmaxCrossEntropyGrad(const T* p, const L* label, const T* dloss, T* dx, int64_t outer, int64_t n,
                                    int64_t inner, int64_t ignore_index, bool use_softmax, cudaStream_t s);

/// accuracy: correct = rows whose label is among their k indices (negative labels count as wrong and
/// are reported like FindBadLabel's), total = n, acc = correct / n (0 for n = 0). One block.
template <class I, class L>
cudaError_t Accuracy(const I* indices, const L* label, int64_t n, int64_t k, float* acc, int32_t* correct,
                     int32_t* total, int64_t* report, cudaStream_t s);

/// Scratch entries SquaredL2Norm needs.
inline constexpr int kNormPartials = 1024;

/// out[0] = sum(x^2): fixed per-block partials (a function of n only) in double, then one block sums
/// them in a fixed order: deterministic. `partials` holds kNormPartials doubles.
template <class T>
cudaError_t SquaredL2Norm(const T* x, int64_t n, T* out, double* partials, cudaStream_t s);

/// dx = 2 * dout[0] * x.
template <class T>
cudaError_t SquaredL2NormGrad(const T* x, const T* dout, T* dx, int64_t n, cudaStream_t s);

}  // namespace paddlec::ops::cuda
