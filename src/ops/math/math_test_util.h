// Test helpers for the math family: naive double-precision references and a multi-threaded
// one-op runner (OpTest runs kernels on one thread; the parallel paths need two).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "paddlec.pb.h"
#include "paddlec/ir/program.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/runtime/executor.h"
#include "testing/op_tester.h"

namespace paddlec::testing::math_test {

/// Row-major multi-index of flat index i in dims.
inline std::vector<int64_t> Unravel(int64_t i, const Dims& dims) {
  std::vector<int64_t> idx(dims.rank());
  for (int d = dims.rank() - 1; d >= 0; --d) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
  return idx;
}

/// Flat index in `aligned` (same rank as idx; size-1 dims read index 0) of a multi-index.
inline int64_t Ravel(const std::vector<int64_t>& idx, const Dims& aligned) {
  int64_t off = 0;
  for (int d = 0; d < aligned.rank(); ++d) off = off * aligned[d] + (aligned[d] == 1 ? 0 : idx[d]);
  return off;
}

/// out[i] = f(x[ix], y[iy]) over `out` dims, with X and Y given by hand-aligned dims (1 = broadcast).
inline std::vector<double> BinaryRef(const std::vector<double>& x, const Dims& xa, const std::vector<double>& y,
                                     const Dims& ya, const Dims& out, const std::function<double(double, double)>& f) {
  std::vector<double> r(out.Numel());
  for (int64_t i = 0; i < out.Numel(); ++i) {
    auto idx = Unravel(i, out);
    r[i] = f(x[Ravel(idx, xa)], y[Ravel(idx, ya)]);
  }
  return r;
}

/// Sums `v` (shaped `full`) onto `aligned` (same rank; 1 where summed), in double.
inline std::vector<double> SumTo(const std::vector<double>& v, const Dims& full, const Dims& aligned) {
  std::vector<double> r(aligned.Numel(), 0.0);
  for (int64_t i = 0; i < full.Numel(); ++i) r[Ravel(Unravel(i, full), aligned)] += v[i];
  return r;
}

template <class T>
Tensor FromDoubles(const Dims& dims, const std::vector<double>& v) {
  std::vector<T> t(v.begin(), v.end());
  return MakeTensor<T>(dims, t);
}

/// Runs a one-op program on the CPU with `threads` threads. `feeds` declares and feeds the input
/// variables (the op may name them in any slot, and use @EMPTY@); every other variable the op writes
/// is declared without a shape. Returns the `fetch` variables.
inline std::map<std::string, Tensor> RunOp(const ops::pb::OpDesc& op, const std::map<std::string, Tensor>& feeds,
                                           const std::vector<std::string>& fetch, int threads = 2) {
  paddlec::proto::CompiledProgram cp;
  auto* block = cp.mutable_main_program()->add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  *block->add_ops() = op;
  for (const auto& [name, t] : feeds) {
    auto* v = block->add_vars();
    v->set_name(name);
    ir::SetVarShape(v, t.dims(), t.dtype());
  }
  for (const auto& slot : op.outputs())
    for (const auto& name : slot.arguments())
      if (!feeds.count(name) && name != ir::kEmptyVarName) block->add_vars()->set_name(name);
  auto module = ir::Module::Create(std::move(cp));
  REQUIRE_OK(module.status());
  passes::PassManager pm;
  REQUIRE_OK(pm.AddPipeline("validate,infer-shape"));
  passes::PassContext pctx{ops::GlobalOpRegistry()};
  REQUIRE_OK(pm.Run(**module, pctx));
  std::map<std::string, Tensor> out;
  {
    auto exec = runtime::Executor::Create(Place::CPU(), {.num_threads = threads, .seed = 7});
    REQUIRE_OK(exec.status());
    runtime::Scope scope;
    for (const auto& [name, t] : feeds) REQUIRE_OK((*exec)->device().CopyFromHost(t, scope.Var(name).tensor()));
    auto plan = (*exec)->Prepare((*module)->main().global_block(), scope);
    REQUIRE_OK(plan.status());
    REQUIRE_OK((*plan)->Run());
    for (const auto& name : fetch) {
      Tensor host;
      REQUIRE_OK((*exec)->device().CopyToHost(scope.Var(name).tensor(), host, HostAllocator()));
      out[name] = std::move(host);
    }
  }
  // OpTest runs single-threaded; leave the OpenMP pool as it expects.
  REQUIRE_OK(runtime::Executor::Create(Place::CPU(), {.num_threads = 1}).status());
  return out;
}

/// RunOp for the common case: each input slot bound to one variable named like the slot.
inline std::map<std::string, Tensor> RunThreaded(const std::string& type,
                                                 const std::vector<std::pair<std::string, Tensor>>& inputs,
                                                 const std::vector<ops::pb::OpDesc::Attr>& attrs,
                                                 const std::vector<std::string>& outputs, int threads = 2) {
  ops::pb::OpDesc op;
  op.set_type(type);
  std::map<std::string, Tensor> feeds;
  for (const auto& [slot, t] : inputs) {
    ops::AddInput(op, slot, {slot});
    feeds[slot] = t;
  }
  for (const auto& slot : outputs) ops::AddOutput(op, slot, {slot});
  for (const auto& a : attrs) *op.add_attrs() = a;
  return RunOp(op, feeds, outputs, threads);
}

}  // namespace paddlec::testing::math_test
