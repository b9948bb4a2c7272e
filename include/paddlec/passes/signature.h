// The interface of a compiled program: what is fed, what is fetched, what is learned.
#pragma once

#include "paddlec/ir/program.h"

namespace paddlec::passes {

/// Fills the module's feed_targets, fetch_targets and parameters from the main program's global
/// block (keeping ones already recorded):
/// - feeds: outputs of `feed` ops, else non-persistable tensors that ops read but none writes;
/// - fetches: inputs of `fetch` ops, else tensors that ops write but none reads;
/// - parameters: persistable tensors other than feed/fetch holders, sorted by name.
void ComputeSignature(ir::Module& module);

}  // namespace paddlec::passes
