// The op_role attribute's bits (PaddlePaddle's OpRole, docs/formats.md): what part of a
// training step an op belongs to. Passes write them, the trainer and the for-test clone read them,
// and the Python package gets them from here (paddlec._core.OP_ROLE) instead of restating them.
#pragma once

#include "framework.pb.h"

namespace paddlec::ir {

enum OpRole : int {
  kOpRoleForward = 0x0000,
  kOpRoleBackward = 0x0001,
  kOpRoleOptimize = 0x0002,
  kOpRoleRPC = 0x0004,
  kOpRoleDist = 0x0008,
  kOpRoleLRSched = 0x0010,
  kOpRoleLoss = 0x0100,
  kOpRoleNotSpecified = 0x1000,
};

/// The roles that end the forward part of a program: an op with any of them is not inference work.
inline constexpr int kOpRoleNotForward = kOpRoleBackward | kOpRoleOptimize | kOpRoleLRSched;

/// The op's op_role attribute (forward when absent).
inline int OpRoleOf(const ::paddle::framework::proto::OpDesc& op) {
  for (const auto& a : op.attrs())
    if (a.name() == "op_role") return a.i();
  return kOpRoleForward;
}

/// True for ops of the forward pass (neither backward, optimizer nor learning-rate schedule).
inline bool IsForwardOp(const ::paddle::framework::proto::OpDesc& op) {
  return (OpRoleOf(op) & kOpRoleNotForward) == 0;
}

}  // namespace paddlec::ir
