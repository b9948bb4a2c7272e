// Launchers of the optimizer family's CUDA kernels (optimizer.cu), in plain types. Every launcher
// queues work on `s` and returns the launch error; scalars (learning rate, beta powers, the optional
// Beta1Tensor/Beta2Tensor/EpsilonTensor/SkipUpdate) are read by the kernels on the device, so no
// launcher ever waits for the GPU. All updates work in place (an output pointer equal to its input).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace paddlec::ops::cuda {

/// A one-element float tensor: read on the device from `p` (float64 when f64), or `value` when p is
/// null (absent, or a host tensor the caller read).
struct Scalar {
  const void* p = nullptr;
  bool f64 = false;
  double value = 0;
};

/// A one-element float output (beta powers), written on the device.
struct ScalarOut {
  void* p = nullptr;
  bool f64 = false;
};

/// Where an update reads and writes the parameter: param -> param_out, or, with update_master
/// (multi_precision), master -> master_out mirrored into param_out. adam's SkipUpdate copies param and,
/// when both are given, master.
template <class T>
struct ParamPtrs {
  const T* param = nullptr;
  T* param_out = nullptr;
  const T* master = nullptr;
  T* master_out = nullptr;
  bool update_master = false;  // requires master and master_out
};

/// ParamOut = Param - lr * Grad.
template <class T>
cudaError_t Sgd(ParamPtrs<T> p, const T* grad, int64_t n, Scalar lr, cudaStream_t s);

/// g = rescale * Grad (+ coeff * Param with l2_decay); v = mu * v + g;
/// Param -= lr * (g + mu * v) with Nesterov, lr * v otherwise.
template <class T>
cudaError_t Momentum(ParamPtrs<T> p, const T* grad, const T* velocity, T* velocity_out, int64_t n, Scalar lr, T mu,
                     T rescale, T coeff, bool l2_decay, bool nesterov, cudaStream_t s);

struct AdamScalars {
  Scalar lr, beta1_pow, beta2_pow;
  Scalar beta1, beta2, epsilon;  // the tensor inputs, or the attributes as values
  const bool* skip = nullptr;    // SkipUpdate on the device; null: never skip
  bool skip_host = false;        // SkipUpdate read on the host (a host tensor)
};

/// Adam's element update (PaddlePaddle's formula, as optimizer.cc): when SkipUpdate holds, every output
/// keeps its input value instead (copied when not in place; master copied when both are given).
template <class T>
cudaError_t Adam(ParamPtrs<T> p, const T* grad, const T* m1, T* m1_out, const T* m2, T* m2_out, int64_t n,
                 const AdamScalars& a, cudaStream_t s);

/// After Adam: beta1_pow_out = beta1_pow * beta1 and beta2_pow_out = beta2_pow * beta2, or copies of
/// the inputs with use_global_beta_pow or SkipUpdate. Queued after Adam, so in-place powers are read
/// by the element update before they change.
cudaError_t AdamBetaPows(const AdamScalars& a, ScalarOut beta1_pow_out, ScalarOut beta2_pow_out,
                         bool use_global_beta_pow, cudaStream_t s);

// ---- SelectedRows gradients: the touched rows are gathered into compact arrays, updated there by the
// kernels above, and scattered back (optimizer_cuda.cc).

/// merged[u, :] = sum of values[order[k], :] for k in [starts[u], starts[u + 1]) (u < rows).
template <class T>
cudaError_t MergeSparseRows(const T* values, const int64_t* order, const int64_t* starts, int64_t rows, int64_t width,
                            T* merged, cudaStream_t s);
/// dst[u, :] = src[rows[u], :].
template <class T>
cudaError_t GatherTableRows(const T* src, const int64_t* rows, int64_t n, int64_t width, T* dst, cudaStream_t s);
/// dst[rows[u], :] = src[u, :].
template <class T>
cudaError_t ScatterTableRows(const T* src, const int64_t* rows, int64_t n, int64_t width, T* dst, cudaStream_t s);

}  // namespace paddlec::ops::cuda
