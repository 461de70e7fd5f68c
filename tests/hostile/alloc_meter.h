// Counts the bytes allocated through operator new in this process (the test
// program and libpot, whose C++ allocations bind to the replacements in
// alloc_meter.cpp): the current total and the peak since the last reset.
#pragma once

#include <cstddef>

namespace pot::test::meter {

size_t current();
size_t peak();
// Sets the peak to the current total.
void reset_peak();

}  // namespace pot::test::meter
