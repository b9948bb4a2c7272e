// CUDA kernels of dropout and dropout_grad. The mask comes from the Philox stream of dropout.cc:
// element i of draw `step` keeps iff ToUnitFloat(Philox(seed).Block(step, i / 4)[i % 4]) >= p, so a
// GPU run draws exactly the CPU's mask. One thread per Philox block (4 consecutive elements).
#include "common/cuda_device.cuh"
#include "nn/nn_cuda.h"

namespace paddlec::ops::cuda {

template <class T>
cudaError_t DropoutTrain(const T* x, T* y, uint8_t* mask, int64_t n, uint64_t seed, const int32_t* seed_i32,
                         const int64_t* seed_i64, uint64_t step, float p, double scale, cudaStream_t s) {
  const T sc = static_cast<T>(scale);
  return ForEach(s, (n + 3) / 4, [=] __device__(int64_t blk) {
    // The Seed input is read here, on the device, so the host never waits for it; dropout.cc casts
    // it int32 -> int64 -> uint64 the same way.
    uint64_t key = seed_i64   ? static_cast<uint64_t>(*seed_i64)
                   : seed_i32 ? static_cast<uint64_t>(static_cast<int64_t>(*seed_i32))
                              : seed;
    const unsigned keep = nn::DropoutKeepBits(Philox(key), step, blk, p);
    const int64_t base = blk * 4;
    for (int l = 0; l < 4; ++l) {
      if (base + l < n) {
        bool k = (keep >> l) & 1u;
        y[base + l] = k ? x[base + l] * sc : T(0);
        if (mask) mask[base + l] = k;
      }
    }
  });
}

template <class T>
cudaError_t Scale(const T* x, T* y, int64_t n, double scale, cudaStream_t s) {
  const T sc = static_cast<T>(scale);
  return ForEach(s, n, [=] __device__(int64_t i) { y[i] = x[i] * sc; });
}

template <class T>
cudaError_t DropoutBackward(const uint8_t* mask, const T* dy, T* dx, int64_t n, double scale, cudaStream_t s) {
  const T sc = static_cast<T>(scale);
  return ForEach(s, n, [=] __device__(int64_t i) { dx[i] = mask[i] ? dy[i] * sc : T(0); });
}

#define PC_INSTANTIATE(T)                                                                                         \
  template cudaError_t DropoutTrain<T>(const T*, T*, uint8_t*, int64_t, uint64_t, const int32_t*, const int64_t*, \
                                       uint64_t, float, double, cudaStream_t);                                    \
  template cudaError_t Scale<T>(const T*, T*, int64_t, double, cudaStream_t);                                     \
  template cudaError_t DropoutBackward<T>(const uint8_t*, const T*, T*, int64_t, double, cudaStream_t);
PC_INSTANTIATE(float)
PC_INSTANTIATE(double)
#undef PC_INSTANTIATE

}  // namespace paddlec::ops::cuda
