// C entry points for token-stream datasets (docs/PROTOCOL.md 15.1).
#include "capi/firewall.h"
#include "data/stream_json.h"
#include "data/stream.h"

struct pot_stream {
  pot::data::StreamDataset d;
};

using namespace pot;
using namespace pot::capi;

extern "C" {

pot_status pot_stream_from_json(pot_stream **out, const char *json, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto d = data::stream_from_json(parse_json_arg(json, "json"));
    *out = new pot_stream{std::move(d)};
  });
}

pot_status pot_stream_decode(pot_stream **out, const uint8_t *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto d = data::StreamDataset::decode(bytes_arg(data, data_len, "data"));
    *out = new pot_stream{std::move(d)};
  });
}

void pot_stream_free(pot_stream *stream) { delete stream; }

pot_status pot_stream_encode(pot_bytes *out, const pot_stream *stream, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, need(stream, "stream")->d.encode());
  });
}

pot_status pot_stream_to_json(pot_bytes *out, const pot_stream *stream, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_text(out, data::stream_to_json(need(stream, "stream")->d).dump());
  });
}

pot_status pot_stream_root(pot_digest *out, const pot_stream *stream, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(stream, "stream")->d.root());
  });
}

uint64_t pot_stream_size(const pot_stream *stream) { return stream ? stream->d.size() : 0; }

pot_status pot_stream_shard_root_file(pot_digest *root, uint64_t *tokens, const char *path, pot_dtype token_dtype,
                                      pot_error **err) {
  return guard(err, [&] {
    need(root, "root");
    need(tokens, "tokens");
    const int code = enum_arg(token_dtype);
    if (code != POT_DTYPE_U16 && code != POT_DTYPE_U32)
      fail(Status::kInvalidArgument, "token_dtype: {} is not U16 or U32", code);
    const auto [r, n] = data::shard_root_file(std::string(str_arg(path, "path")), code == POT_DTYPE_U16 ? 2 : 4);
    from_digest(root, r);
    *tokens = n;
  });
}

pot_status pot_stream_prove_window(pot_bytes *proof, const pot_stream *stream, uint64_t index, const char *shard_path,
                                   pot_error **err) {
  return guard(err, [&] {
    need(proof, "proof");
    const std::string path(str_arg(shard_path, "shard_path"));
    to_bytes(proof, data::prove_window_file(need(stream, "stream")->d, index, path).encode());
  });
}

pot_status pot_stream_locate(uint32_t *shard, uint64_t *offset, const pot_stream *stream, uint64_t index,
                             pot_error **err) {
  return guard(err, [&] {
    need(shard, "shard");
    need(offset, "offset");
    const auto [s, o] = need(stream, "stream")->d.locate(index);
    *shard = s;
    *offset = o;
  });
}

pot_status pot_stream_check_window(pot_bytes *sample, const pot_stream *stream, uint64_t index, const uint8_t *proof,
                                   size_t proof_len, pot_error **err) {
  return guard(err, [&] {
    need(sample, "sample");
    const data::StreamDataset &d = need(stream, "stream")->d;
    const data::WindowProof p = data::WindowProof::decode(bytes_arg(proof, proof_len, "proof"));
    to_bytes(sample, data::window_sample(d, data::check_window(d, index, p)));
  });
}

pot_status pot_stream_sample(pot_bytes *sample, const pot_stream *stream, uint64_t index, const char *shard_path,
                             pot_error **err) {
  return guard(err, [&] {
    need(sample, "sample");
    const data::StreamDataset &d = need(stream, "stream")->d;
    to_bytes(sample, data::window_sample(d, data::read_window_file(d, index, std::string(str_arg(shard_path, "shard_path")))));
  });
}

}  // extern "C"
