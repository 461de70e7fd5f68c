// C entry points for safetensors state files.
#include <map>

#include "capi/firewall.h"
#include "capi/handles.h"
#include "hash/safetensors.h"

using namespace pot;
using namespace pot::capi;


extern "C" {

pot_status pot_safetensors_open(pot_safetensors **out, const char *path, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto f = hash::SafetensorsFile::open(std::string(str_arg(path, "path")));
    *out = new pot_safetensors{std::move(f)};
  });
}

void pot_safetensors_free(pot_safetensors *file) { delete file; }

size_t pot_safetensors_count(const pot_safetensors *file) { return file ? file->file->size() : 0; }

pot_status pot_safetensors_tensor(const char **name, pot_dtype *dtype, const uint64_t **shape,
                                  size_t *shape_len, const void **data, size_t *data_len,
                                  const pot_safetensors *file, size_t index, pot_error **err) {
  return guard(err, [&] {
    need(file, "file");
    if (index >= file->file->size())
      fail(Status::kOutOfRange, "tensor index {} is not below the count {}", index, file->file->size());
    const hash::StEntry &e = file->file->entry(index);
    const ByteView bytes = file->file->data(index);
    if (name) *name = e.meta.name.c_str();
    if (dtype) *dtype = static_cast<pot_dtype>(e.meta.dtype);
    if (shape) *shape = e.meta.shape.data();
    if (shape_len) *shape_len = e.meta.shape.size();
    if (data) *data = bytes.data();
    if (data_len) *data_len = bytes.size();
  });
}

pot_status pot_safetensors_find(size_t *index, const pot_safetensors *file, const char *name,
                                pot_error **err) {
  return guard(err, [&] {
    need(index, "index");
    const std::string_view n = str_arg(name, "name");
    const long i = need(file, "file")->file->find(n);
    if (i < 0) fail(Status::kNotFound, "no tensor named '{}'", n);
    *index = static_cast<size_t>(i);
  });
}

pot_status pot_safetensors_metadata(const char **value, const pot_safetensors *file,
                                    const char *key, pot_error **err) {
  return guard(err, [&] {
    need(value, "value");
    const std::string k(str_arg(key, "key"));
    const auto &m = need(file, "file")->file->header().metadata;
    auto it = m.find(k);
    if (it == m.end()) fail(Status::kNotFound, "no metadata entry '{}'", k);
    *value = it->second.c_str();
  });
}

pot_status pot_safetensors_digest(pot_digest *out, const pot_safetensors *file, uint32_t threads,
                                  pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    from_digest(out, need(file, "file")->file->digest(threads));
  });
}

pot_status pot_safetensors_digest_file(pot_digest *out, const char *path, uint32_t threads,
                                       pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    auto f = hash::SafetensorsFile::open(std::string(str_arg(path, "path")));
    from_digest(out, f->digest(threads));
  });
}

pot_status pot_safetensors_writer_new(pot_safetensors_writer **out, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    *out = new pot_safetensors_writer{};
  });
}

void pot_safetensors_writer_free(pot_safetensors_writer *writer) { delete writer; }

pot_status pot_safetensors_writer_add(pot_safetensors_writer *writer, const char *name,
                                      pot_dtype dtype, const uint64_t *shape, size_t shape_len,
                                      const void *data, size_t data_len, pot_error **err) {
  return guard(err, [&] {
    need(writer, "writer");
    hash::StTensor t{tensor_meta(name, dtype, shape, shape_len), bytes_arg(data, data_len, "data")};
    const uint64_t want = hash::validate_meta(t.meta);
    if (t.data.size() != want)
      fail(Status::kInvalidArgument, "tensor '{}': {} bytes given, dtype and shape imply {}",
           t.meta.name, t.data.size(), want);
    if (t.meta.name == "__metadata__")
      fail(Status::kInvalidArgument, "'__metadata__' is reserved and cannot name a tensor");
    if (writer->names.count(t.meta.name))
      fail(Status::kDuplicate, "tensor '{}' is already in the writer", t.meta.name);
    writer->tensors.push_back(t);
    writer->names.emplace(t.meta.name, writer->tensors.size() - 1);
  });
}

pot_status pot_safetensors_writer_set_metadata(pot_safetensors_writer *writer, const char *key,
                                               const char *value, pot_error **err) {
  return guard(err, [&] {
    need(writer, "writer");
    const std::string k(str_arg(key, "key")), v(str_arg(value, "value"));
    if (!is_valid_utf8(k) || !is_valid_utf8(v))
      fail(Status::kInvalidArgument, "metadata key and value must be valid UTF-8");
    writer->metadata[k] = v;
  });
}

pot_status pot_safetensors_writer_write(const pot_safetensors_writer *writer, const char *path,
                                        pot_error **err) {
  return guard(err, [&] {
    need(writer, "writer");
    hash::write_safetensors(std::string(str_arg(path, "path")), writer->tensors, writer->metadata);
  });
}

pot_status pot_safetensors_writer_bytes(pot_bytes *out, const pot_safetensors_writer *writer, pot_error **err) {
  return guard(err, [&] {
    need(out, "out");
    to_bytes(out, hash::safetensors_bytes(need(writer, "writer")->tensors, need(writer, "writer")->metadata));
  });
}

}  // extern "C"
