// Pass "plan-memory": intermediates share buffers by liveness, and ops that allow it write in place.
//
// Requires: validate, infer-shape (every planned variable has its dtype and dims declared), and
// that it runs last: it renames variables, so later passes see the shared names.
// Guarantees: in the global block, a non-persistable tensor variable whose whole life (from its one
// writer to its last reader) ends before another's begins may be renamed to that other's name,
// when both have the same dtype and declared dims, so the two share one buffer (PaddlePaddle's
// memory-optimize transpiler did the same by renaming). An element-wise op whose input dies at
// that op and matches its output writes the output in place, and so does a gradient that hands
// Out@GRAD on unchanged (elementwise_add_grad's X@GRAD). Results are unchanged: a buffer is
// only reused once every reader of its previous value has run.
// Never planned: feeds, fetch targets, what the caller keeps (PassContext::kept), the loss,
// parameters' gradients, persistable variables, variables that outlive the step because nothing
// reads them (program outputs), variables with more than one writer or read before written,
// variables any other block names (sub-blocks read their parents' variables), and every variable of
// an op without a shape function (feed, fetch, control flow), since those size their outputs at run
// time. Dims with -1 are the batch: variables compare by declared dims, so only a -1 in the leading
// dim is accepted (one batch size per run).
// Variables left without an op are removed from the block; fetching one by its old name after -O2
// is therefore an error, not a stale value.
#include <algorithm>
#include <map>
#include <set>

#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass.h"

namespace paddlec::passes {
namespace {

namespace pb = ::paddle::framework::proto;

/// Ops whose kernels read each output element only from the same position of `input` before they
/// write it, so `output` may alias `input` when the two have one size.
struct InPlaceRule {
  const char* op;
  const char* input;
  const char* output;
};
constexpr InPlaceRule kInPlace[] = {
    {"relu", "X", "Out"},
    {"sigmoid", "X", "Out"},
    {"tanh", "X", "Out"},
    {"scale", "X", "Out"},
    {"elementwise_add", "X", "Out"},
    {"elementwise_add_grad", "Out@GRAD", "X@GRAD"},
    {"elementwise_sub_grad", "Out@GRAD", "X@GRAD"},
    {"relu_grad", "Out@GRAD", "X@GRAD"},
    {"sigmoid_grad", "Out@GRAD", "X@GRAD"},
    {"tanh_grad", "Out@GRAD", "X@GRAD"},
};

class PlanMemoryPass final : public Pass {
 public:
  std::string_view Name() const override { return "plan-memory"; }
  std::string_view Summary() const override {
    return "share intermediates' buffers by liveness and run element-wise ops in place";
  }

  StatusOr<bool> Run(ir::Module& module, PassContext& ctx) override {
    ir::Program& program = module.main();
    if (program.num_blocks() == 0) return false;
    std::set<std::string, std::less<>> fixed;
    for (const auto& f : module.compiled().feed_targets()) fixed.insert(f.name());
    for (const auto& f : module.compiled().fetch_targets()) fixed.insert(f);
    fixed.insert(ctx.kept.begin(), ctx.kept.end());
    fixed.insert(module.compiled().loss());
    for (const auto& pg : module.compiled().param_grads()) fixed.insert(pg.grad());
    // Names used by the other blocks stay: a sub-block reads and writes its parents' variables.
    for (int b = 1; b < program.num_blocks(); ++b)
      for (const auto& op : program.block(b).desc().ops())
        for (const auto* slots : {&op.inputs(), &op.outputs()})
          for (const auto& s : *slots)
            for (const auto& a : s.arguments()) fixed.insert(a);
    return PlanBlock(program.global_block(), ctx.registry, fixed);
  }

 private:
  struct Life {
    int def = -1, last = -1;
    int writers = 0;
    bool read_before_def = false;
  };

  static std::string SizeKey(const pb::VarDesc& v) {
    if (!ir::IsTensorVar(v)) return "";
    auto dims = ir::VarDims(v);
    if (!dims.ok() || dims->rank() == 0) return "";
    for (int i = 0; i < dims->rank(); ++i)
      if ((*dims)[i] < 0 && i > 0) return "";
    return std::string(DTypeName(ir::VarDType(v))) + dims->ToString();
  }

  static bool PlanBlock(ir::Block& block, const ops::OpRegistry& registry, std::set<std::string, std::less<>>& fixed) {
    auto& ops = *block.desc().mutable_ops();
    std::map<std::string, Life, std::less<>> life;
    for (int i = 0; i < ops.size(); ++i) {
      const pb::OpDesc& op = ops[i];
      const ops::OpInfo* info = registry.Find(op.type());
      const bool sized_at_run_time = info == nullptr || info->infer_shape() == nullptr;
      std::set<std::string> ins;
      for (const auto& s : op.inputs())
        for (const auto& a : s.arguments()) {
          ins.insert(a);
          Life& l = life[a];
          if (l.def < 0) l.read_before_def = true;
          l.last = i;
          if (sized_at_run_time) fixed.insert(a);
        }
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments()) {
          Life& l = life[a];
          if (l.def < 0) l.def = i;
          ++l.writers;
          // Written in place by the op itself (sum into its input, batch_norm's statistics).
          if (ins.count(a) || sized_at_run_time) fixed.insert(a);
        }
    }
    auto plannable = [&](const std::string& name, const Life& l) {
      if (fixed.count(name) || name == ir::kEmptyVarName) return false;
      if (l.writers != 1 || l.read_before_def || l.last <= l.def) return false;  // unread: a program output
      const pb::VarDesc* v = block.FindVar(name);
      return v != nullptr && !v->persistable() && block.desc().idx() == 0 && !SizeKey(*v).empty() &&
             block.FindVarBlock(name) == &block;
    };
    std::map<std::string, std::string, std::less<>> rename;  // variable -> the buffer (variable) it uses
    std::map<std::string, std::vector<std::string>> free;    // size key -> buffers free for reuse
    std::map<int, std::vector<std::string>> dies_at;         // op index -> buffers whose value dies there
    auto buffer_of = [&](const std::string& v) {
      auto it = rename.find(v);
      return it == rename.end() ? v : it->second;
    };
    for (const auto& [name, l] : life)
      if (plannable(name, l)) dies_at[l.last].push_back(name);
    for (int i = 0; i < ops.size(); ++i) {
      const pb::OpDesc& op = ops[i];
      // In place: the output takes over an input that dies here, when the op allows it.
      for (const InPlaceRule& r : kInPlace) {
        if (op.type() != r.op) continue;
        const std::string *in = nullptr, *out = nullptr;
        for (const auto& s : op.inputs())
          if (s.parameter() == r.input && s.arguments_size() == 1) in = &s.arguments(0);
        for (const auto& s : op.outputs())
          if (s.parameter() == r.output && s.arguments_size() == 1) out = &s.arguments(0);
        if (in == nullptr || out == nullptr || *in == *out) continue;
        auto li = life.find(*in), lo = life.find(*out);
        if (!plannable(*in, li->second) || !plannable(*out, lo->second) || li->second.last != i || lo->second.def != i)
          continue;
        if (SizeKey(*block.FindVar(*in)) != SizeKey(*block.FindVar(*out))) continue;
        // The input appears once in the op, or the aliasing would reach another slot's reads.
        int uses = 0;
        for (const auto& s : op.inputs())
          for (const auto& a : s.arguments()) uses += a == *in;
        if (uses != 1) continue;
        const std::string buf = buffer_of(*in);
        rename[*out] = buf;
        // The buffer now dies with the output, not with the input.
        auto& here = dies_at[i];
        here.erase(std::remove(here.begin(), here.end(), *in), here.end());
      }
      // Outputs born here take a free buffer of their size.
      for (const auto& s : op.outputs())
        for (const auto& a : s.arguments()) {
          auto l = life.find(a);
          if (rename.count(a) || l == life.end() || l->second.def != i || !plannable(a, l->second)) continue;
          auto& pool = free[SizeKey(*block.FindVar(a))];
          if (pool.empty()) continue;
          rename[a] = pool.back();
          pool.pop_back();
        }
      // Values whose last reader was this op free their buffers, after this op's outputs were placed
      // so that no op writes over its own inputs.
      for (const auto& v : dies_at[i]) free[SizeKey(*block.FindVar(v))].push_back(buffer_of(v));
    }
    if (rename.empty()) return false;
    for (auto& op : ops)
      for (auto* slots : {op.mutable_inputs(), op.mutable_outputs()})
        for (auto& s : *slots)
          for (auto& a : *s.mutable_arguments())
            if (auto it = rename.find(a); it != rename.end()) a = it->second;
    auto* vars = block.desc().mutable_vars();
    for (int i = vars->size() - 1; i >= 0; --i)
      if (rename.count(vars->Get(i).name())) vars->DeleteSubrange(i, 1);
    block.RebuildIndex();  // the name index holds positions
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreatePlanMemoryPass() { return std::make_unique<PlanMemoryPass>(); }

}  // namespace paddlec::passes
