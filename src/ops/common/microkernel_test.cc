// The register tiles of common/microkernel.h against a double-precision product, on every path this
// CPU has: AVX2, and the AVX-512 tiles wherever the CPU runs AVX-512 at all, whether or not
// TilesUseAvx512 would choose them here (so a CPU where AVX-512 lowers the flop rate still tests them).
#include "common/microkernel.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
namespace paddlec::ops {
namespace {

/// The most rows of any tile: the AVX-512 pair's.
constexpr int kMaxRows = kPairTileRows512;

/// One tile's operands and the expected C, for `rows` rows and `cols` (16 or 32) columns.
struct TileCase {
  int rows, cols;
  int64_t depth;
  bool transposed, accumulate, bias, relu;
  std::vector<float> a, b, c0, bias_values;
  int64_t lda, ldb, ldc;

  TileCase(int r, int n, int64_t k, bool t, bool acc, bool with_bias, bool with_relu)
      : rows(r), cols(n), depth(k), transposed(t), accumulate(acc), bias(with_bias), relu(with_relu) {
    std::mt19937 gen(static_cast<unsigned>(r * 1000 + n * 10 + k));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    // Strides wider than the tile, as in a larger product; B's two 16-column halves lie apart.
    lda = transposed ? kMaxRows + 3 : k + 5;
    ldb = 16 + 7;
    ldc = n + 9;
    a.resize(static_cast<size_t>(transposed ? k * lda : kMaxRows * lda));
    b.resize(static_cast<size_t>(2 * k * ldb + 64));
    c0.resize(static_cast<size_t>(kMaxRows * ldc));
    bias_values.resize(static_cast<size_t>(n));
    for (auto* v : {&a, &b, &c0, &bias_values})
      for (float& x : *v) x = u(gen);
  }
  float A(int r, int64_t q) const { return transposed ? a[q * lda + r] : a[r * lda + q]; }
  /// Column j of B: the first 16 from b, the rest from the second half at b_hi().
  float B(int64_t q, int j) const { return j < 16 ? b[q * ldb + j] : b[k_hi() + q * ldb + j - 16]; }
  int64_t k_hi() const { return depth * ldb + 32; }
  double Expected(int r, int j) const {
    double sum = accumulate ? c0[r * ldc + j] : 0.0;
    for (int64_t q = 0; q < depth; ++q) sum += static_cast<double>(A(r, q)) * B(q, j);
    if (bias) sum += bias_values[j];
    return relu ? std::max(sum, 0.0) : sum;
  }
  TileEpilogue Epilogue() const { return {bias ? bias_values.data() : nullptr, relu}; }
  void Check(const std::vector<float>& c) const {
    for (int r = 0; r < kMaxRows; ++r)
      for (int j = 0; j < cols; ++j) {
        CAPTURE(r);
        CAPTURE(j);
        if (r < rows)
          CHECK(std::abs(c[r * ldc + j] - Expected(r, j)) <= 2e-7 * static_cast<double>(depth) + 1e-6);
        else
          CHECK(c[r * ldc + j] == c0[r * ldc + j]);  // rows past the tile are not written
      }
    for (int r = 0; r < kMaxRows; ++r)
      for (int64_t j = cols; j < ldc; ++j) CHECK(c[r * ldc + j] == c0[r * ldc + j]);
  }
};

template <bool kTransposed, int kRows>
void RunAvx512(const TileCase& t, std::vector<float>& c) {
  if constexpr (kRows > kTileRows) {
    MicroTilePair512<kTransposed, kRows>(t.depth, t.a.data(), t.lda, t.b.data(), t.b.data() + t.k_hi(), t.ldb, c.data(),
                                         t.ldc, t.Epilogue(), t.accumulate);
  } else if (t.cols == 16) {
    MicroTile512<kTransposed, kRows>(t.depth, t.a.data(), t.lda, t.b.data(), t.ldb, c.data(), t.ldc, t.Epilogue(),
                                     t.accumulate);
  } else {
    MicroTilePair512<kTransposed, kRows>(t.depth, t.a.data(), t.lda, t.b.data(), t.b.data() + t.k_hi(), t.ldb, c.data(),
                                         t.ldc, t.Epilogue(), t.accumulate);
  }
}

template <bool kTransposed>
void RunAvx512Rows(const TileCase& t, std::vector<float>& c) {
  switch (t.rows) {
    case 1:
      return RunAvx512<kTransposed, 1>(t, c);
    case 2:
      return RunAvx512<kTransposed, 2>(t, c);
    case 3:
      return RunAvx512<kTransposed, 3>(t, c);
    case 4:
      return RunAvx512<kTransposed, 4>(t, c);
    case 5:
      return RunAvx512<kTransposed, 5>(t, c);
    case 6:
      return RunAvx512<kTransposed, 6>(t, c);
    case 7:
      return RunAvx512<kTransposed, 7>(t, c);
    default:
      return RunAvx512<kTransposed, 8>(t, c);
  }
}

/// Every tile shape and option: rows 1 to `pair_rows` for 32 columns and 1-6 for 16, depths odd and
/// even (MicroTile512 sums even and odd k apart), A plain or transposed, C overwritten or accumulated,
/// with and without the epilogue.
template <class Run>
void ForEachCase(int pair_rows, Run&& run) {
  for (int cols : {16, 32})
    for (int rows = 1; rows <= (cols == 32 ? pair_rows : kTileRows); ++rows)
      for (int64_t depth : {1, 2, 7, 64, 301})
        for (bool transposed : {false, true})
          for (bool accumulate : {false, true})
            for (bool epilogue : {false, true}) {
              CAPTURE(cols);
              CAPTURE(rows);
              CAPTURE(depth);
              CAPTURE(transposed);
              CAPTURE(accumulate);
              CAPTURE(epilogue);
              const TileCase t(rows, cols, depth, transposed, accumulate, epilogue, epilogue);
              std::vector<float> c = t.c0;
              run(t, c);
              t.Check(c);
            }
}

TEST_CASE("microkernel: the tiles MicroTileRows and MicroTilePairRows choose") {
  ForEachCase(PairTileRows(), [](const TileCase& t, std::vector<float>& c) {
    if (t.cols == 16 && t.transposed)
      MicroTileRows<true>(t.rows, t.depth, t.a.data(), t.lda, t.b.data(), t.ldb, c.data(), t.ldc, t.Epilogue(),
                          t.accumulate);
    else if (t.cols == 16)
      MicroTileRows(t.rows, t.depth, t.a.data(), t.lda, t.b.data(), t.ldb, c.data(), t.ldc, t.Epilogue(), t.accumulate);
    else if (t.transposed)
      MicroTilePairRows<true>(t.rows, t.depth, t.a.data(), t.lda, t.b.data(), t.b.data() + t.k_hi(), t.ldb, c.data(),
                              t.ldc, t.Epilogue(), t.accumulate);
    else
      MicroTilePairRows(t.rows, t.depth, t.a.data(), t.lda, t.b.data(), t.b.data() + t.k_hi(), t.ldb, c.data(), t.ldc,
                        t.Epilogue(), t.accumulate);
  });
}

TEST_CASE("microkernel: the AVX-512 tiles, wherever the CPU has AVX-512") {
  if (!HasAvx512()) {
    MESSAGE("skipped: this CPU has no AVX-512");
    return;
  }
  ForEachCase(kPairTileRows512, [](const TileCase& t, std::vector<float>& c) {
    if (t.transposed)
      RunAvx512Rows<true>(t, c);
    else
      RunAvx512Rows<false>(t, c);
  });
}

TEST_CASE("microkernel: TilesUseAvx512 follows the FMA probe") {
  // PADDLEC_AVX512 (unset in the tests) would override it.
  if (std::getenv("PADDLEC_AVX512") == nullptr) CHECK(TilesUseAvx512() == Avx512KeepsFmaRate());
  CHECK(HasAvx512() == (Avx512FmaTimeRatio() > 0));
  // Doubling the rate keeps it.
  CHECK((!Avx512DoublesFma() || Avx512KeepsFmaRate()));
  CHECK((!Avx512KeepsFmaRate() || HasAvx512()));
}

}  // namespace
}  // namespace paddlec::ops
#endif
