// A stream dataset's token files on disk (docs/PROTOCOL.md 15.1), as the
// miner reads them to train and to open steps: window i's tokens, its sample
// and its proof. Each shard is read once, on first use, into its chunk tree
// (the leaf hash of every 4 KiB chunk and every perfect inner node: 32 bytes
// per chunk and per node, about 16 MiB per GiB of tokens), which must give
// the descriptor's shard root; after that a window costs reading the 2-3
// chunks that cover it, each checked against its leaf hash.
#pragma once

#include <string>
#include <vector>

#include "data/stream.h"

namespace pot::data {

class StreamFiles {
 public:
  // One path per shard, in order (kInvalidArgument otherwise). Nothing is
  // read yet.
  StreamFiles(StreamDataset dataset, std::vector<std::string> paths);

  const StreamDataset &dataset() const { return d_; }
  const std::vector<std::string> &paths() const { return paths_; }

  // The W tokens of window `index` (kOutOfRange past size()); kIo when a
  // file cannot be read, kProofMismatch naming the file when its bytes are
  // not the ones the descriptor commits to (checked chunk by chunk).
  Bytes window_tokens(uint64_t index);
  // window_sample of window_tokens(index).
  Bytes sample(uint64_t index);
  // The window proof of window `index` (what check_window accepts).
  WindowProof prove(uint64_t index);
  // Reads and checks every shard now (the errors of window_tokens).
  void check_all();

 private:
  struct Tree {
    bool built = false;
    std::vector<std::vector<Digest>> levels;  // levels[k][j]: the node over chunks [j 2^k, (j+1) 2^k)
  };
  const Tree &tree(uint32_t shard);
  // The covered chunks' bytes, each checked against its leaf hash.
  Bytes covered_chunks(const WindowCover &cv);

  StreamDataset d_;
  std::vector<std::string> paths_;
  std::vector<Tree> trees_;
};

}  // namespace pot::data
