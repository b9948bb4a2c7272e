// The collective ops in one process (a group of one: no launcher), on every available place (the
// GPU cases run NCCL with one rank and skip without a GPU), and coalesce_tensor's aliasing. The
// multi-rank behaviour is tested under mpirun (src/passes/data_parallel_test.cc, testdata/cli).
#include <doctest/doctest.h>

#include "paddlec/runtime/comm.h"
#include "testing/op_tester.h"
#include "testing/program_runner.h"

namespace paddlec::ops {
namespace {

using testing::MakeTensor;
using testing::OpTest;

TEST_CASE("collective ops: in a group of one, every reduction and the broadcast return X") {
  if (runtime::LauncherWorldSize() != 1) return;  // under mpirun, data_parallel_test covers them
  Tensor x = MakeTensor<float>({2, 3}, {1, -2, 3, 4, 5, -6});
  for (const char* type : {"c_allreduce_sum", "c_allreduce_max", "c_allreduce_min", "c_allreduce_prod", "c_broadcast",
                           "c_identity", "c_sync_calc_stream", "c_sync_comm_stream"}) {
    CAPTURE(type);
    OpTest t(type);
    t.Input("X", x).Output("Out");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", x);
  }
  // On the compute stream, and (the default) on the communication stream with no c_sync_comm_stream
  // after it: the end of the run orders the fetch after it.
  for (bool calc : {true, false}) {
    CAPTURE(calc);
    OpTest t("c_allreduce_sum");
    t.Input("X", x).Attr("use_calc_stream", calc).Output("Out");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("Out", x);
  }
  OpTest gather("c_allgather");
  gather.Input("X", x).Attr("nranks", 1).Output("Out");
  REQUIRE_OK(gather.Run());
  gather.ExpectOutput("Out", x);
  // PaddlePaddle 3's names: all_reduce (every reduce_type, avg included) and broadcast, slots x/out.
  for (int type = 0; type <= 4; ++type) {
    CAPTURE(type);
    OpTest t("all_reduce");
    t.Input("x", x).Attr("reduce_type", type).Output("out");
    REQUIRE_OK(t.Run());
    t.ExpectOutput("out", x);
  }
  OpTest bcast("broadcast");
  bcast.Input("x", x).Output("out");
  REQUIRE_OK(bcast.Run());
  bcast.ExpectOutput("out", x);
}

TEST_CASE("collective ops: errors name the ring, the rank count and the shapes") {
  OpTest ring("c_allreduce_sum");
  ring.Input("X", MakeTensor<float>({2}, {1, 2})).Attr("ring_id", 3).Output("Out");
  Status st = ring.Run();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().Render().find("ring_id 3 has no communicator") != std::string::npos);

  OpTest gather("c_allgather");
  gather.Input("X", MakeTensor<float>({2}, {1, 2})).Attr("nranks", 4).Output("Out");
  REQUIRE_OK(gather.Compile());
  CHECK(gather.CompiledDims("Out") == Dims{8});
  if (runtime::LauncherWorldSize() == 1) {
    st = gather.Run();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().Render().find("nranks is 4 but the process group has 1 ranks") != std::string::npos);
  }

  OpTest coalesce("coalesce_tensor");
  coalesce.Inputs("Input", {MakeTensor<float>({2}, {1, 2}), MakeTensor<double>({1}, {3})})
      .Output("Output", 2)
      .Output("FusedOutput");
  st = coalesce.Compile();
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().Render().find("is float64 but dtype is float32") != std::string::npos);
}

TEST_CASE("coalesce_tensor: packs the inputs into FusedOutput, the outputs shaped like the inputs") {
  OpTest t("coalesce_tensor");
  t.Inputs("Input", {MakeTensor<float>({2, 2}, {1, 2, 3, 4}), MakeTensor<float>({3}, {5, 6, 7})})
      .Attr("copy_data", true)
      .Output("Output", 2)
      .Output("FusedOutput");
  REQUIRE_OK(t.Run());
  t.ExpectOutput("FusedOutput", MakeTensor<float>({7}, {1, 2, 3, 4, 5, 6, 7}));
  t.ExpectOutput("Output", MakeTensor<float>({2, 2}, {1, 2, 3, 4}), {}, 0);
  t.ExpectOutput("Output", MakeTensor<float>({3}, {5, 6, 7}), {}, 1);

  OpTest zero("coalesce_tensor");
  zero.Inputs("Input", {MakeTensor<float>({2}, {1, 2})})
      .Attr("set_constant", true)
      .Output("Output")
      .Output("FusedOutput");
  REQUIRE_OK(zero.Run());
  zero.ExpectOutput("FusedOutput", MakeTensor<float>({2}, {0, 0}));
}

TEST_CASE("coalesce_tensor: its outputs are views of FusedOutput, so an op on the bucket updates them") {
  // coalesce_tensor packs a and b into `fused`, then scale doubles `fused` in place: a and b double too.
  auto m = testing::CompileText(R"pb(blocks {
                                       idx: 0
                                       parent_idx: -1
                                       vars {
                                         name: "a"
                                         type {
                                           type: LOD_TENSOR
                                           lod_tensor { tensor { data_type: FP32 dims: 2 dims: 2 } }
                                         }
                                       }
                                       vars {
                                         name: "b"
                                         type {
                                           type: LOD_TENSOR
                                           lod_tensor { tensor { data_type: FP32 dims: 3 } }
                                         }
                                       }
                                       ops {
                                         type: "coalesce_tensor"
                                         inputs { parameter: "Input" arguments: "a" arguments: "b" }
                                         outputs { parameter: "Output" arguments: "a" arguments: "b" }
                                         outputs { parameter: "FusedOutput" arguments: "fused" }
                                         attrs { name: "copy_data" type: BOOLEAN b: true }
                                       }
                                       ops {
                                         type: "scale"
                                         inputs { parameter: "X" arguments: "fused" }
                                         outputs { parameter: "Out" arguments: "fused" }
                                         attrs { name: "scale" type: FLOAT f: 2 }
                                       }
                                     })pb");
  REQUIRE(m.ok());
  auto out = testing::RunModule(
      **m, {{"a", MakeTensor<float>({2, 2}, {1, 2, 3, 4})}, {"b", MakeTensor<float>({3}, {5, 6, 7})}},
      {"a", "b", "fused"});
  REQUIRE(out.ok());
  testing::ExpectClose(out->at("fused"), MakeTensor<float>({7}, {2, 4, 6, 8, 10, 12, 14}), {}, "fused");
  testing::ExpectClose(out->at("a"), MakeTensor<float>({2, 2}, {2, 4, 6, 8}), {}, "a");
  testing::ExpectClose(out->at("b"), MakeTensor<float>({3}, {10, 12, 14}), {}, "b");
}

TEST_CASE("collective ops: an allreduce-sum and c_identity differentiate into an allreduce-sum") {
  for (const char* type : {"c_allreduce_sum", "c_identity"}) {
    ir::pb::OpDesc op;
    op.set_type(type);
    AddInput(op, "X", {"x"});
    AddOutput(op, "Out", {"y"});
    auto grads = testing::MakeGradOps(op);
    REQUIRE(grads.size() == 1);
    CHECK(grads[0].type() == "c_allreduce_sum");
    CHECK(testing::SlotArgs(grads[0], "X") == std::vector<std::string>{"y@GRAD"});
    CHECK(testing::SlotArgs(grads[0], "Out", false) == std::vector<std::string>{"x@GRAD"});
  }
}

}  // namespace
}  // namespace paddlec::ops
