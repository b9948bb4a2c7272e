// The loss family: cross_entropy, softmax_with_cross_entropy, accuracy and squared_l2_norm, one file each.
#include "loss/loss_common.h"

namespace paddlec::ops {

void RegisterLossOps(OpRegistry& registry) {
  RegisterCrossEntropyOps(registry);
  RegisterSoftmaxWithCrossEntropyOps(registry);
  RegisterAccuracyOps(registry);
  RegisterSquaredL2NormOps(registry);
}

}  // namespace paddlec::ops
