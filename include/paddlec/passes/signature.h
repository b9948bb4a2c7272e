// The interface of a compiled program: what is fed, what is fetched, what is learned.
#pragma once

#include "paddlec/ir/program.h"

namespace paddlec::passes {

/// Fills the module's feed_targets, fetch_targets and parameters from the main program's global
/// block (keeping ones already recorded):
/// - feeds: outputs of `feed` ops, else non-persistable tensors that ops read but none writes;
/// - fetches: inputs of `fetch` ops, else tensors that ops write but none reads, except outputs of
///   intermediate slots (batch_norm's SavedMean);
/// - parameters: persistable tensors other than feed/fetch holders, sorted by name;
/// - for a program with its own training ops (PaddlePaddle's): the loss (output of the op whose
///   op_role is Forward|Loss) and the (parameter, gradient) pairs of its optimizer ops, when the
///   backward pass did not record them.
void ComputeSignature(ir::Module& module);

}  // namespace paddlec::passes
