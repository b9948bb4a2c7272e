// The doctest main shared by every test binary (compiled once: the header is heavy).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
