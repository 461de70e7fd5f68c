// The stream dataset fuzz_stream checks window proofs against, and
// fuzz_make_seeds proves windows of: two uint16 shards (3000 and 700
// tokens) with 33-token windows.
#pragma once

#include <vector>

#include "data/stream.h"

namespace pot::fuzz {

inline std::vector<Bytes> stream_shards() {
  std::vector<Bytes> shards;
  for (uint64_t n : {3000, 700}) {
    Bytes b;
    for (uint64_t j = 0; j < n; ++j) {
      const uint64_t t = (n * 7 + j * 31) % 50257;
      b.push_back(static_cast<uint8_t>(t));
      b.push_back(static_cast<uint8_t>(t >> 8));
    }
    shards.push_back(std::move(b));
  }
  return shards;
}

inline data::StreamDataset stream_dataset() {
  data::StreamDataset d;
  d.window = 33;
  d.views = {{"x", 0, 32}, {"y", 1, 32}};
  for (const Bytes &s : stream_shards()) d.shards.push_back({s.size() / 2, data::shard_root(s, 2)});
  return d;
}

}  // namespace pot::fuzz
