// Image datasets for Python: io::LoadImageDataset (the reader `paddlec train` uses), as NumPy arrays.
#include <pybind11/stl.h>

#include <cstring>

#include "bindings.h"
#include "paddlec/io/dataset.h"

namespace paddlec::python {
namespace {

/// A NumPy array (made by numpy.empty, so NumPy's C ABI does not matter) holding a copy of `v`.
template <class T>
py::object ToArray(const std::vector<T>& v, py::tuple shape, const char* dtype) {
  py::object out = py::module_::import("numpy").attr("empty")(shape, dtype);
  Py_buffer view;
  if (PyObject_GetBuffer(out.ptr(), &view, PyBUF_CONTIG) != 0) throw py::error_already_set();
  std::memcpy(view.buf, v.data(), v.size() * sizeof(T));
  PyBuffer_Release(&view);
  return out;
}

py::dict SetToDict(const io::ClassificationSet& set) {
  py::dict d;
  d["images"] = ToArray(set.images, py::make_tuple(set.count, set.height, set.width), "float32");
  d["labels"] = ToArray(set.labels, py::make_tuple(set.count), "int64");
  return d;
}

}  // namespace

void RegisterDatasets(py::module_& m) {
  m.def(
      "load_image_dataset",
      [](const std::string& dir, const std::string& normalize) {
        io::Normalization norm;
        if (normalize == "unit")
          norm = io::Normalization::kUnit;
        else if (normalize == "meanstd")
          norm = io::Normalization::kMeanStd;
        else
          throw PaddlecException(
              MakeError(ErrorCode::kInvalidArgument, "normalize must be 'unit' or 'meanstd', not '{}'", normalize));
        io::ImageDataset data;
        {
          py::gil_scoped_release release;
          auto loaded = io::LoadImageDataset(dir, norm);
          if (!loaded.ok()) {
            py::gil_scoped_acquire gil;
            ThrowIfError(std::move(loaded).status());
          }
          data = std::move(loaded).value();
        }
        py::dict out;
        out["train"] = SetToDict(data.train);
        out["test"] = SetToDict(data.test);
        return out;
      },
      py::arg("dir"), py::arg("normalize") = "unit",
      "Reads <dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (the MNIST family's layout) into "
      "{'train': {'images': float32 [N, H, W], 'labels': int64 [N]}, 'test': {...}}; pixels scaled to "
      "[0, 1] ('unit') or standardized by the training set's mean and deviation ('meanstd').");
}

}  // namespace paddlec::python
