// Feed, fetch and parameter lists of a compiled program.
#include "paddlec/passes/signature.h"

#include <algorithm>
#include <set>

namespace paddlec::passes {

void ComputeSignature(ir::Module& module) {
  auto& compiled = module.compiled();
  ir::Block& block = module.main().global_block();
  ir::DefUse du(block);

  if (compiled.feed_targets_size() == 0) {
    std::vector<std::string> feeds;
    for (const auto& op : block.desc().ops())
      if (op.type() == "feed")
        for (const auto& s : op.outputs())
          for (const auto& a : s.arguments()) feeds.push_back(a);
    if (feeds.empty()) {
      std::set<std::string> seen;
      for (const auto& op : block.desc().ops())
        for (const auto& s : op.inputs())
          for (const auto& a : s.arguments()) {
            const auto* v = block.FindVar(a);
            if (v == nullptr || v->persistable() || !ir::IsTensorVar(*v) || !du.Writers(a).empty()) continue;
            if (seen.insert(a).second) feeds.push_back(a);
          }
    }
    for (const auto& name : feeds) {
      auto* f = compiled.add_feed_targets();
      f->set_name(name);
      if (const auto* v = block.FindVar(name); v && ir::IsTensorVar(*v)) {
        const auto* t = ir::TensorDescOf(*v);
        f->set_data_type(t->data_type());
        for (int64_t d : t->dims()) f->add_dims(d);
      }
    }
  }

  if (compiled.fetch_targets_size() == 0) {
    std::vector<std::string> fetches;
    for (const auto& op : block.desc().ops())
      if (op.type() == "fetch")
        for (const auto& s : op.inputs())
          for (const auto& a : s.arguments()) fetches.push_back(a);
    if (fetches.empty()) {
      std::set<std::string> seen;
      for (const auto& op : block.desc().ops())
        for (const auto& s : op.outputs())
          for (const auto& a : s.arguments()) {
            const auto* v = block.FindVar(a);
            if (v == nullptr || v->persistable() || !ir::IsTensorVar(*v) || !du.Readers(a).empty()) continue;
            if (a.find("@GRAD") != std::string::npos) continue;
            if (seen.insert(a).second) fetches.push_back(a);
          }
    }
    for (const auto& f : fetches) compiled.add_fetch_targets(f);
  }

  std::set<std::string> params(compiled.parameters().begin(), compiled.parameters().end());
  for (const auto& v : block.desc().vars()) {
    if (!v.persistable() || !ir::IsTensorVar(v)) continue;
    params.insert(v.name());
  }
  compiled.clear_parameters();
  for (const auto& p : params) compiled.add_parameters(p);
}

}  // namespace paddlec::passes
