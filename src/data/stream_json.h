// The JSON forms of a token-stream dataset (docs/cli.md "Stream datasets"):
// the descriptor as an object, and the stream file (stream.json) a miner
// keeps beside its token files, which adds where each shard lies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/stream.h"
#include "data/stream_files.h"

namespace pot::data {

inline constexpr std::string_view kStreamFileFormat = "pot-stream/1";
inline constexpr std::string_view kStreamFileName = "stream.json";

// {"token_dtype", "output_dtype", "window", "views": [{"name", "start",
// "length"}], "shards": [{"tokens", "root"}]}; strict (kInvalidArgument
// naming the key, kLimit for a bound), then validated.
data::StreamDataset stream_from_json(const nlohmann::json &j);
nlohmann::json stream_to_json(const data::StreamDataset &d);

// The stream file: {"format": "pot-stream/1", "stream": <descriptor>,
// "files": [one path per shard, relative to the file's directory or
// absolute]}. Another format is kUnsupported.
nlohmann::json stream_file_json(const data::StreamDataset &d, const std::vector<std::string> &files);
data::StreamFiles read_stream_file(const std::string &path);

// The stream file a dataset location names: the file itself, or stream.json
// inside a directory; nullopt for a directory without one (a directory of
// samples, %06d.safetensors).
std::optional<std::string> stream_file_of(const std::string &dataset);

}  // namespace pot::data
