// The doctest main shared by every test binary (compiled once: the header is heavy). Logging is
// set to warnings so passing tests stay quiet.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "paddlec/core/logging.h"

int main(int argc, char** argv) {
  paddlec::InitLogging(0);
  return doctest::Context(argc, argv).run();
}
