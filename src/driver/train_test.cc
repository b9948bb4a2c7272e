// In-process training on a Fashion-MNIST subset: the MLP and LeNet configs learn (CI-sized bars; the
// full 5-epoch figures come from `paddlec train` and are quoted in the notes), and a corrupt
// dataset file is an error naming it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "paddlec/core/file.h"
#include "paddlec/driver/driver.h"

namespace paddlec::driver {
namespace {

double LastAccuracy(const std::string& metrics) {
  auto text = ReadFile(metrics);
  REQUIRE(text.ok());
  size_t p = text->rfind("\"test_accuracy\": ");
  REQUIRE(p != std::string::npos);
  return std::strtod(text->c_str() + p + 17, nullptr);
}

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("paddlec_train_test_" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST_CASE("the MLP and LeNet configs learn Fashion-MNIST") {
  TempDir dir;
  struct Case {
    const char* config;
    int64_t train, test;
    int epochs;
    double bar;
  };
  for (const Case& c : {Case{"configs/mlp.pbtxt", 4000, 1000, 2, 0.75}, Case{"configs/lenet.pbtxt", 2000, 500, 1, 0.60}}) {
    CAPTURE(c.config);
    TrainOptions o;
    o.program = std::string(PADDLEC_SOURCE_DIR) + "/" + c.config;
    o.limit_train = c.train;
    o.limit_test = c.test;
    o.epochs = c.epochs;
    o.seed = 7;
    o.progress = false;
    o.metrics_file = (dir.path / "m.jsonl").string();
    o.compile.optimizer = "adam";
    o.compile.lr = 0.001;
    std::ostringstream out;
    Status st = RunTrain(o, out);
    REQUIRE_MESSAGE(st.ok(), (st.ok() ? "" : st.error().Render()));
    CHECK(LastAccuracy(o.metrics_file) >= c.bar);
  }
}

TEST_CASE("a corrupt dataset file is an error that names it") {
  TempDir dir;
  const char* src = "/usr/share/datasets/fashion-mnist";
  for (const char* f : {"train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    std::filesystem::copy_file(std::string(src) + "/" + f, dir.path / f);
  auto images = ReadFile(std::string(src) + "/train-images-idx3-ubyte.gz");
  REQUIRE(images.ok());
  std::string truncated = (dir.path / "train-images-idx3-ubyte.gz").string();
  REQUIRE(WriteFileAtomic(truncated, images->substr(0, images->size() / 2)).ok());
  TrainOptions o;
  o.program = std::string(PADDLEC_SOURCE_DIR) + "/configs/mlp.pbtxt";
  o.dataset = "fashion-mnist:" + dir.path.string();
  o.progress = false;
  std::ostringstream out;
  Status st = RunTrain(o, out);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message().find(truncated) != std::string::npos);
}

}  // namespace
}  // namespace paddlec::driver
