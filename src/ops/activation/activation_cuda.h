// Launchers of the activation family's CUDA kernels (activation.cu), in plain types.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "activation/activation_kind.h"

namespace paddlec::ops::cuda {

/// y = f(x) element-wise, f's parameters in `p` (activation_slots.h's DecodeActivation).
template <class T>
cudaError_t ActivationForward(Activation f, ActParams p, const T* x, T* y, int64_t n, cudaStream_t s);
/// dx = f'(a) * dy, where `a` is the forward output for GradReads::kOut and the input otherwise.
template <class T>
cudaError_t ActivationBackward(Activation f, ActParams p, const T* a, const T* dy, T* dx, int64_t n, cudaStream_t s);
/// Softmax or log-softmax of every length-n line with stride `inner`, over an [outer, n, inner] view.
template <class T>
cudaError_t SoftmaxForward(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log, cudaStream_t s);
template <class T>
cudaError_t SoftmaxBackward(const T* out, const T* dout, T* dx, int64_t outer, int64_t n, int64_t inner, bool log,
                            cudaStream_t s);

}  // namespace paddlec::ops::cuda
