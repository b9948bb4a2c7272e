// Tests of the runtime layer: the caching allocator, tensor buffers and scopes.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string_view>

#include "paddlec/core/env.h"
#include "paddlec/runtime/allocator.h"
#include "paddlec/runtime/scope.h"
#include "paddlec/runtime/spin_count.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::runtime {
namespace {

TEST_CASE("libgomp's spin count follows the variable of paddlec's own spin, and leaves the user's alone") {
  CHECK(std::string_view(kSpinMicrosVariable) == kSpinMicrosSwitch.name);
  unsetenv("OMP_WAIT_POLICY");
  unsetenv("GOMP_SPINCOUNT");
  setenv(kSpinMicrosVariable, "0", 1);
  CHECK(BoundedSpinCount() == 0);
  setenv(kSpinMicrosVariable, "25", 1);
  const int64_t short_spin = BoundedSpinCount().value_or(-1);
  setenv(kSpinMicrosVariable, "1600", 1);
  const int64_t long_spin = BoundedSpinCount().value_or(-1);
  CHECK(0 < short_spin);
  CHECK(short_spin < long_spin);
  setenv("GOMP_SPINCOUNT", "777", 1);
  CHECK_FALSE(BoundedSpinCount().has_value());
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kSpinMicrosVariable);
}

TEST_CASE("CpuCachingAllocator reuses freed blocks and counts system allocations") {
  auto alloc = CpuCachingAllocator::Create();
  CHECK(CpuCachingAllocator::BinSize(1) == 64);
  CHECK(CpuCachingAllocator::BinSize(100) == 128);
  CHECK(CpuCachingAllocator::BinSize(5000) == 5120);
  CHECK(CpuCachingAllocator::BinSize(1 << 20) == (1 << 20));
  CHECK(CpuCachingAllocator::BinSize((1 << 20) + 1) == (1 << 20) + (1 << 18));
  void* a = *alloc->Allocate(1000);
  CHECK(reinterpret_cast<uintptr_t>(a) % 64 == 0);
  alloc->Free(a, 1000);
  void* b = *alloc->Allocate(1000);
  CHECK(a == b);  // same bin: the cached block comes back
  CHECK(alloc->stats().system_allocs == 1);
  alloc->Free(b, 1000);
  CHECK(alloc->stats().bytes_in_use == 0);
  CHECK(alloc->stats().bytes_cached == 1024);
  alloc->ReleaseCache();
  CHECK(alloc->stats().bytes_cached == 0);
}

TEST_CASE("Tensor buffers outlive their allocator handle and are reused when they fit") {
  Tensor t(DType::kFloat32, {4, 4});
  {
    auto alloc = CpuCachingAllocator::Create();
    REQUIRE(t.Allocate(*alloc).ok());
    void* p = t.raw_data();
    t.set_dims({2, 4});
    REQUIRE(t.Allocate(*alloc).ok());
    CHECK(t.raw_data() == p);  // smaller shape: same buffer
    Tensor alias;
    alias.ShareBufferWith(t);
    REQUIRE(t.Allocate(*alloc).ok());
    CHECK(t.raw_data() != p);  // shared buffers are never written under another tensor
  }
  t.data<float>()[0] = 1.f;  // the buffer keeps the allocator alive
}

TEST_CASE("Buffer stamps change on every write path and are unique across buffers") {
  auto alloc = CpuCachingAllocator::Create();
  Tensor t(DType::kFloat32, {8});
  REQUIRE(t.Allocate(*alloc).ok());
  const Tensor& read = t;
  const uint64_t s0 = read.stamp();
  CHECK(s0 != 0);
  CHECK(read.stamp() == s0);  // reads leave it alone
  (void)read.data<float>();
  CHECK(read.stamp() == s0);

  t.data<float>()[0] = 1.f;  // non-const access is a write
  const uint64_t s1 = read.stamp();
  CHECK(s1 != s0);
  REQUIRE(t.Allocate(*alloc).ok());  // reused buffer: allocated to be written
  const uint64_t s2 = read.stamp();
  CHECK(s2 != s1);

  Tensor alias;  // a write through an alias is a write to the buffer
  alias.ShareBufferWith(t);
  CHECK(alias.stamp() == s2);
  alias.data<float>()[1] = 2.f;
  CHECK(read.stamp() != s2);

  Tensor other(DType::kFloat32, {8});
  REQUIRE(other.Allocate(*alloc).ok());
  CHECK(other.stamp() != read.stamp());
  CHECK(Tensor().stamp() == 0);

  float external[4] = {};
  Tensor wrapped(DType::kFloat32, {4});
  wrapped.set_buffer(std::make_shared<Buffer>(external, sizeof(external), Place::CPU(), nullptr));
  CHECK(wrapped.stamp() == 0);  // its owner may write it behind our back
}

TEST_CASE("Scopes look variables up through their parents") {
  Scope root;
  root.Var("w").tensor().set_dims({3});
  Scope& child = root.NewChild();
  CHECK(child.Find("w") == root.FindLocal("w"));
  CHECK(child.FindLocal("w") == nullptr);
  child.Var("tmp");
  CHECK(root.Find("tmp") == nullptr);
  CHECK(root.LocalNames() == std::vector<std::string>{"w"});
  Scope& other = root.NewChild();
  CHECK(root.DeleteChild(&child));
  Scope unrelated;
  CHECK_FALSE(root.DeleteChild(&unrelated));
  CHECK(other.Find("w") == root.FindLocal("w"));
}

}  // namespace
}  // namespace paddlec::runtime
