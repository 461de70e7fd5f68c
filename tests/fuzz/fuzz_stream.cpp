// Token-stream datasets (docs/PROTOCOL.md 15.1): a descriptor (first byte
// even) must decode to a record that encodes to the same bytes; a window
// proof (first byte odd) is decoded and checked against a fixed dataset, and
// a proof that passes must give exactly the window's tokens.
#include <algorithm>
#include <cstdlib>

#include "fuzz_common.h"
#include "stream_fixture.h"

POT_FUZZ_TARGET({
  if (input.empty()) return 0;
  const pot::ByteView body = input.subspan(1);
  if (input[0] % 2 == 0) {
    const auto d = pot::data::StreamDataset::decode(body);
    const pot::Bytes again = d.encode();
    if (again.size() != body.size() || !std::equal(again.begin(), again.end(), body.begin())) std::abort();
    (void)d.root();
    return 0;
  }
  static const pot::data::StreamDataset d = pot::fuzz::stream_dataset();
  static const std::vector<pot::Bytes> shards = pot::fuzz::stream_shards();
  const auto p = pot::data::WindowProof::decode(body);
  if (p.index >= d.size()) return 0;
  const pot::Bytes w = pot::data::check_window(d, p.index, p);
  const auto [s, o] = d.locate(p.index);
  if (!std::equal(w.begin(), w.end(), shards[s].begin() + static_cast<long>(o * 2))) std::abort();
  (void)pot::data::window_sample(d, w);
})
