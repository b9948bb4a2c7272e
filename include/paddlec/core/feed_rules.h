// The one rule for an array fed to a program input, which the CLI (`run --feed`) and Python
// (`Executor.run(feed=...)`) both apply, so the two front ends accept, convert and refuse the same
// arrays with the same messages.
#pragma once

#include <string>
#include <string_view>

#include "paddlec/core/dims.h"
#include "paddlec/core/dtype.h"
#include "paddlec/core/error.h"

namespace paddlec {

/// What happens to a fed array's elements.
struct FeedCast {
  bool convert = false;  // convert to the declared dtype
  std::string warning;   // non-empty when the conversion can lose information (float64 -> float32)
};

/// An array of `given` dtype fed to input `name` declared `declared`. The same dtype passes; one of
/// the same kind (floating to floating, signed integer to signed integer) is converted, with a
/// warning when it narrows; anything else (float to int, int to float, bool) is refused, since it
/// is almost always the wrong array.
StatusOr<FeedCast> CheckFeedDType(std::string_view name, DType declared, DType given);
/// The same for an array whose dtype is known by name ("float64", or NumPy's "complex128", which
/// paddlec has no type for and refuses).
StatusOr<FeedCast> CheckFeedDType(std::string_view name, DType declared, std::string_view given);

/// An array of shape `given` fed to input `name` declared `declared` (-1: any size); the note that
/// suggests a reshape is worded for each front end.
Status CheckFeedDims(std::string_view name, const Dims& declared, const Dims& given);

}  // namespace paddlec
