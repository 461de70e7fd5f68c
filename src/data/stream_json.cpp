#include "data/stream_json.h"

#include <filesystem>

#include "codec/json_fields.h"
#include "common/error.h"
#include "common/files.h"
#include "hash/safetensors.h"

namespace pot::data {

namespace fs = std::filesystem;

namespace {

hash::DType dtype_field(const codec::JsonFields &f, const char *key) {
  const std::string name = f.str(key);
  const auto d = hash::dtype_from_name(name);
  if (!d) fail(Status::kInvalidArgument, "{}: '{}' is not a dtype name", f.path(key), name);
  return *d;
}

const nlohmann::json &array_field(const codec::JsonFields &f, const char *key, size_t max) {
  const nlohmann::json &v = f.value(key);
  if (!v.is_array()) fail(Status::kInvalidArgument, "{} must be an array", f.path(key));
  if (v.size() > max) fail(Status::kLimit, "{}: {}, at most {}", f.path(key), v.size(), max);
  return v;
}

}  // namespace

data::StreamDataset stream_from_json(const nlohmann::json &j) {
  codec::JsonFields f(j, "stream");
  f.only({"token_dtype", "output_dtype", "window", "views", "shards"});
  data::StreamDataset d;
  d.token_dtype = dtype_field(f, "token_dtype");
  d.output_dtype = dtype_field(f, "output_dtype");
  d.window = f.u32("window");
  const nlohmann::json &views = array_field(f, "views", data::kMaxViews);
  const nlohmann::json &shards = array_field(f, "shards", data::kMaxShards);
  for (size_t i = 0; i < views.size(); ++i) {
    codec::JsonFields v(views[i], fmt::format("stream.views[{}]", i));
    v.only({"name", "start", "length"});
    d.views.push_back({v.str("name"), v.u32("start"), v.u32("length")});
  }
  for (size_t i = 0; i < shards.size(); ++i) {
    codec::JsonFields s(shards[i], fmt::format("stream.shards[{}]", i));
    s.only({"tokens", "root"});
    d.shards.push_back({s.u64("tokens"), s.digest("root")});
  }
  d.validate();
  return d;
}

nlohmann::json stream_to_json(const data::StreamDataset &d) {
  nlohmann::json views = nlohmann::json::array(), shards = nlohmann::json::array();
  for (const auto &v : d.views) views.push_back({{"name", v.name}, {"start", v.start}, {"length", v.length}});
  for (const auto &s : d.shards) shards.push_back({{"tokens", s.tokens}, {"root", s.root.hex()}});
  return {{"token_dtype", std::string(hash::dtype_name(d.token_dtype))},
          {"output_dtype", std::string(hash::dtype_name(d.output_dtype))},
          {"window", d.window},
          {"views", views},
          {"shards", shards}};
}

nlohmann::json stream_file_json(const data::StreamDataset &d, const std::vector<std::string> &files) {
  if (files.size() != d.shards.size())
    fail(Status::kInvalidArgument, "{} files for a stream of {} shards", files.size(), d.shards.size());
  return {{"format", std::string(kStreamFileFormat)}, {"stream", stream_to_json(d)}, {"files", files}};
}

data::StreamFiles read_stream_file(const std::string &path) {
  const Bytes text = read_all(path, size_t{64} << 20);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception &e) {
    fail(Status::kInvalidArgument, "stream file '{}' is not JSON: {}", path, e.what());
  }
  codec::JsonFields f(j, path);
  f.only({"format", "stream", "files"});
  const std::string format = f.str("format");
  if (format != kStreamFileFormat)
    fail(Status::kUnsupported, "stream file '{}' has the format '{}', this pot reads '{}'", path, format,
         kStreamFileFormat);
  data::StreamDataset d = stream_from_json(f.object("stream"));
  const nlohmann::json &files = array_field(f, "files", data::kMaxShards);
  const fs::path base = fs::path(path).parent_path();
  std::vector<std::string> paths;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i].is_string()) fail(Status::kInvalidArgument, "{}.files[{}] must be a string", path, i);
    const fs::path p(files[i].get<std::string>());
    paths.push_back((p.is_absolute() ? p : base / p).string());
  }
  return data::StreamFiles(std::move(d), std::move(paths));
}

std::optional<std::string> stream_file_of(const std::string &dataset) {
  std::error_code ec;
  if (fs::is_regular_file(dataset, ec)) return dataset;
  const std::string inside = (fs::path(dataset) / std::string(kStreamFileName)).string();
  if (fs::is_regular_file(inside, ec)) return inside;
  return std::nullopt;
}

}  // namespace pot::data
