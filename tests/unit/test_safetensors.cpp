// safetensors: round trip, digest equals the state builder's, and a hostile
// header for every validation rule (each rejected with its status, fast,
// without allocating what the header claims).
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.h"
#include "hash/safetensors.h"
#include "core_test_util.h"
#include "test_util.h"

using namespace pot;
using pot::test::status_of;
using namespace pot::hash;

namespace {

void write_raw(const std::string &path, const std::string &header, const Bytes &data,
               uint64_t declared = UINT64_MAX) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = declared == UINT64_MAX ? header.size() : declared;
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << header;
  out.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
}

Status open_status(const std::string &header, size_t data_len) {
  test::TempDir dir;
  write_raw(dir.file("x.safetensors"), header, Bytes(data_len));
  return status_of([&] { SafetensorsFile::open(dir.file("x.safetensors")); });
}

}  // namespace

TEST(Safetensors, RoundTripAndDigestEqualsStateBuilder) {
  test::TempDir dir;
  const Bytes w = test::pseudo_random_bytes(3 * 5 * 4, 1), b = test::pseudo_random_bytes(5 * 2, 2),
              big = test::pseudo_random_bytes(3 * kChunkSize + 17, 3);
  const std::vector<StTensor> tensors = {
      {{"layer.weight", DType::kF32, {3, 5}}, w},
      {{"layer.bias", DType::kBF16, {5}}, b},
      {{"embed", DType::kU8, {big.size()}}, big},
      {{"empty", DType::kF16, {0, 4}}, {}},
  };
  write_safetensors(dir.file("s.safetensors"), tensors, {{"format", "pt"}});
  auto f = SafetensorsFile::open(dir.file("s.safetensors"));
  ASSERT_EQ(f->size(), 4u);
  EXPECT_EQ(f->entry(0).meta.name, "embed");  // bytewise name order
  EXPECT_EQ(f->entry(3).meta.name, "layer.weight");
  EXPECT_EQ(f->header().metadata.at("format"), "pt");
  const long i = f->find("layer.bias");
  ASSERT_GE(i, 0);
  EXPECT_EQ(f->entry(i).meta.dtype, DType::kBF16);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), f->data(i).begin(), f->data(i).end()));
  EXPECT_EQ(f->find("nope"), -1);

  StateBuilder s(1);
  for (const StTensor &t : tensors) s.add_tensor(t.meta, t.data);
  EXPECT_EQ(f->digest(1), s.digest());
  EXPECT_EQ(f->digest(2), s.digest());
  // The header is padded to a multiple of 8, as the reference writer does.
  std::ifstream in(dir.file("s.safetensors"), std::ios::binary);
  uint8_t len[8];
  in.read(reinterpret_cast<char *>(len), 8);
  EXPECT_EQ(get_u64le(len) % 8, 0u);
  // No temporary file is left behind.
  for (const auto &e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "s.safetensors") << "left behind: " << e.path();
}

TEST(Safetensors, WriterRejectsBadTensorsWithoutWriting) {
  test::TempDir dir;
  const Bytes d(8);
  EXPECT_EQ(status_of([&] { write_safetensors(dir.file("a"), {{{"x", DType::kF32, {3}}, d}}, {}); }),
            Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] {
              write_safetensors(dir.file("a"), {{{"x", DType::kF32, {2}}, d}, {{"x", DType::kF32, {2}}, d}}, {});
            }),
            Status::kDuplicate);
  EXPECT_FALSE(std::filesystem::exists(dir.file("a")));
  EXPECT_EQ(status_of([&] { write_safetensors(dir.file("no/such/dir/a"), {}, {}); }), Status::kIo);
}

TEST(Safetensors, HostileHeaders) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_EQ(open_status(ok, 8), Status::kOk);
  EXPECT_EQ(open_status(ok + "    ", 8), Status::kOk);  // trailing padding
  struct Case {
    const char *what;
    std::string header;
    size_t data;
    Status want;
  } cases[] = {
      {"not json", "{nope", 8, Status::kMalformed},
      {"not an object", "[1,2]", 0, Status::kMalformed},
      {"leading space", " " + ok, 8, Status::kMalformed},
      {"duplicate key", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, Status::kMalformed},
      {"duplicate field", R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, Status::kMalformed},
      {"unknown field", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8, Status::kMalformed},
      {"missing field", R"({"a":{"dtype":"F32","shape":[2]}})", 8, Status::kMalformed},
      {"unknown dtype", R"({"a":{"dtype":"F128","shape":[2],"data_offsets":[0,8]}})", 8, Status::kUnsupported},
      {"dtype not string", R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8, Status::kMalformed},
      {"negative dim", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, Status::kMalformed},
      {"float dim", R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8, Status::kMalformed},
      {"huge dim", R"({"a":{"dtype":"F32","shape":[18446744073709551615,2],"data_offsets":[0,8]}})", 8, Status::kLimit},
      {"too many dims", R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1, Status::kLimit},
      {"length mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, Status::kMalformed},
      {"offset past data", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", 8, Status::kMalformed},
      {"reversed offsets", R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8, Status::kMalformed},
      {"three offsets", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", 8, Status::kMalformed},
      {"overlap", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12, Status::kMalformed},
      {"gap", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12, Status::kMalformed},
      {"trailing bytes", ok, 9, Status::kMalformed},
      {"metadata not strings", R"({"__metadata__":{"k":1}})", 0, Status::kMalformed},
      {"empty name", R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, Status::kMalformed},
      {"deep nesting", R"({"a":{"dtype":"F32","shape":[[[[[[2]]]]]],"data_offsets":[0,8]}})", 8, Status::kMalformed},
  };
  for (const Case &c : cases) EXPECT_EQ(open_status(c.header, c.data), c.want) << c.what;
}

TEST(Safetensors, HugeDeclaredSizesFailFastWithoutAllocating) {
  test::TempDir dir;
  // A header length of 2^62: refused from the 8-byte prefix alone.
  write_raw(dir.file("a"), "{}", {}, uint64_t{1} << 62);
  EXPECT_EQ(status_of([&] { SafetensorsFile::open(dir.file("a")); }), Status::kLimit);
  // Within the limit but past the end of the file.
  write_raw(dir.file("b"), "{}", {}, 1000);
  EXPECT_EQ(status_of([&] { SafetensorsFile::open(dir.file("b")); }), Status::kMalformed);
  // A tensor claiming 2^62 bytes in a small file.
  write_raw(dir.file("c"), R"({"a":{"dtype":"U8","shape":[4611686018427387904],"data_offsets":[0,4611686018427387904]}})", Bytes(8));
  EXPECT_EQ(status_of([&] { SafetensorsFile::open(dir.file("c")); }), Status::kMalformed);
  // Truncated files.
  write_raw(dir.file("d"), "", {}, 0);
  EXPECT_EQ(status_of([&] { SafetensorsFile::open(dir.file("d")); }), Status::kMalformed);
  std::ofstream(dir.file("e")) << "abc";
  EXPECT_EQ(status_of([&] { SafetensorsFile::open(dir.file("e")); }), Status::kMalformed);
  EXPECT_EQ(status_of([&] { SafetensorsFile::open(dir.file("missing")); }), Status::kIo);
  EXPECT_EQ(status_of([&] { SafetensorsFile::open(dir.path().string()); }), Status::kIo);
}
