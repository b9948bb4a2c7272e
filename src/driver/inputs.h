// Inputs `paddlec run` makes by itself, as trtexec and tvmc do: shapes from --input-shape
// NAME:1x3x224x224 (or the declaration, unknown sizes taken as 1) filled with zeros, ones, or seeded
// random values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "paddlec/core/dims.h"
#include "paddlec/core/error.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::driver {

/// "img:4x1x28x28" -> ("img", [4, 1, 28, 28]); "x:" is a scalar.
StatusOr<std::pair<std::string, Dims>> ParseInputShape(const std::string& spec);

/// "words=0,2,5" -> ("words", [[0, 2, 5]]); levels are separated by ';' ("x=0,1,3;0,2,5,9").
/// Checked for form only; the fed tensor checks it against its rows (runtime::LoDProblem).
StatusOr<std::pair<std::string, runtime::LoD>> ParseLoDSpec(const std::string& spec);

enum class Fill { kZeros, kOnes, kRandom };
StatusOr<Fill> ParseFill(const std::string& name);

/// A host tensor of `dtype` and `dims` filled as asked. Random values are uniform in [0, 1) for
/// floating types and 0 or 1 for integer ones (valid class labels), the same for a seed on every
/// machine; each input mixes its name into the seed so two inputs differ.
StatusOr<runtime::Tensor> MakeInput(const std::string& name, DType dtype, const Dims& dims, Fill fill, uint64_t seed,
                                    runtime::Allocator& alloc);

}  // namespace paddlec::driver
