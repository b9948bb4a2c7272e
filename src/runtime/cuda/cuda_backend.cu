// Entry point of libpaddlec_cuda.so, the CUDA backend the runtime loads with dlopen when a GPU
// place is requested (see scripts/cmake/cuda.cmake for why it is a separate library).
#include <cuda_runtime.h>

#include <cstdio>

extern "C" {

/// Reports the number of usable CUDA devices, or -1 with a reason in `why` (driver missing, ...).
__attribute__((visibility("default"))) int paddlec_cuda_device_count(char* why, int why_len) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    std::snprintf(why, static_cast<size_t>(why_len), "%s", cudaGetErrorString(err));
    return -1;
  }
  return n;
}

}  // extern "C"
