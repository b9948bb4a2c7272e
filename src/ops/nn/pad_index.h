// pad3d's geometry and per-element bodies as __host__ __device__ functions on plain types, run by the
// CPU kernels (pad.cc) and the CUDA kernels (pad.cu) alike. No paddlec headers: nvcc compiles it.
//
// Forward: every output element reads one input element (or the constant). Backward gathers: each
// input element sums the output gradients of the positions that read it (PadPreimage, ascending), so
// no atomics are needed, the result is deterministic, and the CPU and the GPU add in the same order.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define PC_PAD_HD __host__ __device__
#else
#define PC_PAD_HD
#endif

namespace paddlec::ops::nn {

enum class PadMode : int { kConstant, kReflect, kReplicate, kCircular };

/// One padded axis: output index o reads input index PadSource(o); `before` may be negative (a crop).
struct PadAxis {
  int64_t in, out, before;
};

/// A pad3d instance: [n, c, d, h, w] (channel_last: [n, d, h, w, c]); axis 0 = depth, 1 = height,
/// 2 = width.
struct Pad3dShape {
  int64_t n, c;
  PadAxis axis[3];
  PadMode mode;
  bool channel_last;
  double value;  // the constant of PadMode::kConstant
};

/// The input index output index `o` reads along an axis, or -1 for the constant. PaddlePaddle's pad3d
/// index rules: reflect mirrors about the edge elements (pads smaller than the input), replicate
/// repeats them, circular wraps around (any pad).
PC_PAD_HD inline int64_t PadSource(const PadAxis& a, PadMode mode, int64_t o) {
  int64_t i = o - a.before;
  switch (mode) {
    case PadMode::kConstant:
      return (i >= 0 && i < a.in) ? i : -1;
    case PadMode::kReflect:
      i = i < 0 ? -i : i;
      return i < 2 * a.in - i - 2 ? i : 2 * a.in - i - 2;
    case PadMode::kReplicate:
      return i < 0 ? 0 : (i >= a.in ? a.in - 1 : i);
    case PadMode::kCircular:
      return ((i % a.in) + a.in) % a.in;
  }
  return -1;
}

/// Calls f(o) for every output index o with PadSource(o) == i, in increasing order.
template <class F>
PC_PAD_HD void PadPreimage(const PadAxis& a, PadMode mode, int64_t i, F&& f) {
  switch (mode) {
    case PadMode::kConstant: {
      int64_t o = i + a.before;
      if (o >= 0 && o < a.out) f(o);
      return;
    }
    case PadMode::kReplicate: {
      int64_t lo = i == 0 ? 0 : i + a.before;
      int64_t hi = i == a.in - 1 ? a.out - 1 : i + a.before;
      for (int64_t o = lo < 0 ? 0 : lo; o <= hi && o < a.out; ++o) f(o);
      return;
    }
    case PadMode::kReflect: {
      // The left mirror image, the element itself, the right mirror image (single reflections: the
      // pads are smaller than the input).
      const int64_t candidates[3] = {i > 0 ? a.before - i : -1, i + a.before,
                                     i < a.in - 1 ? a.before + 2 * (a.in - 1) - i : -1};
      for (int64_t o : candidates)
        if (o >= 0 && o < a.out && PadSource(a, mode, o) == i) f(o);
      return;
    }
    case PadMode::kCircular: {
      for (int64_t o = (((i + a.before) % a.in) + a.in) % a.in; o < a.out; o += a.in) f(o);
      return;
    }
  }
}

/// Offsets of the (d, h, w) element of plane (n, c) in a tensor of spatial sizes `size` (layout of `p`).
PC_PAD_HD inline int64_t PadOffset(const Pad3dShape& p, int64_t n, int64_t c, const int64_t size[3], int64_t d,
                                   int64_t h, int64_t w) {
  if (p.channel_last) return (((n * size[0] + d) * size[1] + h) * size[2] + w) * p.c + c;
  return (((n * p.c + c) * size[0] + d) * size[1] + h) * size[2] + w;
}

/// Splits a flat index over a tensor of spatial sizes `size` (layout of `p`) into n, c, d, h, w.
PC_PAD_HD inline void PadSplit(const Pad3dShape& p, const int64_t size[3], int64_t q, int64_t idx[5]) {
  if (p.channel_last) {
    idx[1] = q % p.c;
    q /= p.c;
  }
  idx[4] = q % size[2];
  q /= size[2];
  idx[3] = q % size[1];
  q /= size[1];
  idx[2] = q % size[0];
  q /= size[0];
  if (!p.channel_last) {
    idx[1] = q % p.c;
    q /= p.c;
  }
  idx[0] = q;
}

/// Output element q (flat, in the layout of `p`).
template <class T>
PC_PAD_HD T PadOutputAt(const Pad3dShape& p, const T* x, int64_t q) {
  const int64_t in[3] = {p.axis[0].in, p.axis[1].in, p.axis[2].in};
  const int64_t out[3] = {p.axis[0].out, p.axis[1].out, p.axis[2].out};
  int64_t idx[5];
  PadSplit(p, out, q, idx);
  int64_t src[3];
  for (int a = 0; a < 3; ++a) {
    src[a] = PadSource(p.axis[a], p.mode, idx[2 + a]);
    if (src[a] < 0) return static_cast<T>(p.value);
  }
  return x[PadOffset(p, idx[0], idx[1], in, src[0], src[1], src[2])];
}

/// Input gradient element q (flat, in the layout of `p`): the sum of dy over the outputs reading it,
/// depth-major, then height, then width, each ascending.
template <class T>
PC_PAD_HD T PadGradAt(const Pad3dShape& p, const T* dy, int64_t q) {
  const int64_t in[3] = {p.axis[0].in, p.axis[1].in, p.axis[2].in};
  const int64_t out[3] = {p.axis[0].out, p.axis[1].out, p.axis[2].out};
  int64_t idx[5];
  PadSplit(p, in, q, idx);
  T sum = 0;
  PadPreimage(p.axis[0], p.mode, idx[2], [&](int64_t od) {
    PadPreimage(p.axis[1], p.mode, idx[3], [&](int64_t oh) {
      PadPreimage(p.axis[2], p.mode, idx[4],
                  [&](int64_t ow) { sum += dy[PadOffset(p, idx[0], idx[1], out, od, oh, ow)]; });
    });
  });
  return sum;
}

}  // namespace paddlec::ops::nn
