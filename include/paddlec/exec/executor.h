// Executor: owns a device context and builds plans on it.
#pragma once

#include <memory>

#include "paddlec/core/place.h"
#include "paddlec/exec/plan.h"

namespace paddlec::exec {

struct ExecutorOptions {
  int num_threads = 0;  // CPU intra-op threads; 0 = one per core
  uint64_t seed = 0;    // program random seed passed to every plan
  /// Run CPU kernels with denormals flushed to zero (FTZ/DAZ); false keeps IEEE gradual underflow.
  bool flush_denormals = true;
  /// Every plan checks each op's outputs for NaN/Inf (PlanOptions::check_nan_inf).
  bool check_nan_inf = false;
};

class Executor {
 public:
  /// A CPU executor, or a CUDA one (loading the CUDA backend); errors say what is missing.
  static StatusOr<std::unique_ptr<Executor>> Create(Place place, const ExecutorOptions& options = {});

  DeviceContext& device() const { return *device_; }
  Place place() const { return device_->place(); }

  /// Builds a plan for `block` (or a range of it) over `scope`.
  StatusOr<std::unique_ptr<Plan>> Prepare(ir::Block& block, Scope& scope, PlanOptions options = {});
  /// Builds and runs a block once (e.g. a startup program).
  Status RunOnce(ir::Block& block, Scope& scope, PlanOptions options = {});

 private:
  explicit Executor(std::unique_ptr<DeviceContext> device, ExecutorOptions options)
      : device_(std::move(device)), options_(options) {}
  std::unique_ptr<DeviceContext> device_;
  ExecutorOptions options_;
};

/// Creates the device context of a place: the CPU one, or the CUDA backend's (dlopened on first use).
StatusOr<std::unique_ptr<DeviceContext>> CreateDeviceContext(Place place, int num_threads = 0);

}  // namespace paddlec::exec
