// A failing rank's note reaches stderr whole, before the group is stopped.
#include <doctest/doctest.h>

#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "paddlec/driver/driver.h"
#include "paddlec/runtime/comm.h"

namespace paddlec::driver {
namespace {

// Records each piece handed to the stream buffer: with an unbuffered stream such as std::cerr,
// each piece is one write(2), and another writer's output may land between two of them.
class PieceBuf : public std::streambuf {
 public:
  std::vector<std::string> pieces;

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    pieces.emplace_back(s, static_cast<size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) pieces.emplace_back(1, traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
};

struct Aborted {
  int exit_code;
};

class FakeGroup final : public runtime::Communicator {
 public:
  FakeGroup(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "fake"; }
  Status AllReduce(void*, int64_t, DType, runtime::ReduceOp) override { return Status::OK(); }
  Status Broadcast(void*, int64_t, int) override { return Status::OK(); }
  Status AllGather(const void*, void*, int64_t) override { return Status::OK(); }
  [[noreturn]] void Abort(int exit_code) override { throw Aborted{exit_code}; }

 private:
  int rank_, size_;
};

TEST_CASE("a failing rank says which it is in one write, then stops the group") {
  PieceBuf buf;
  std::ostream err(&buf);
  FakeGroup group(1, 2);
  int exit_code = 0;
  try {
    StopOtherRanks(&group, err);
  } catch (const Aborted& a) {
    exit_code = a.exit_code;
  }
  CHECK(exit_code == 1);
  REQUIRE(buf.pieces.size() == 1);
  CHECK(buf.pieces[0] == "note: the error happened on rank 1 of 2; stopping every rank\n");
}

TEST_CASE("a process alone, or without a communicator, prints nothing and stops nothing") {
  PieceBuf buf;
  std::ostream err(&buf);
  FakeGroup alone(0, 1);
  StopOtherRanks(&alone, err);  // would throw Aborted if it stopped the group
  StopOtherRanks(nullptr, err);
  CHECK(buf.pieces.empty());
}

}  // namespace
}  // namespace paddlec::driver
