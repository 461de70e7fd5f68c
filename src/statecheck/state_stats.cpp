#include "statecheck/state_stats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "hash/parallel.h"
#include "hash/tensor.h"

namespace pot::statecheck {

using hash::DType;

namespace {

// One chunk's share of a tensor's statistics.
struct Part {
  double sum_squares = 0;  // the chunk's kSumLanes lanes, added pairwise
  double max_abs = 0;
  uint64_t nonfinite = 0, subnormal = 0, zeros = 0;
};

// The bit patterns of each floating-point type, on the magnitude (sign bit
// cleared): at or above kInf not finite, below kMinNormal and not zero
// subnormal. Unsigned order of magnitudes is the order of the values.
struct F16 {
  using U = uint16_t;
  static constexpr U kAbs = 0x7fff, kInf = 0x7c00, kMinNormal = 0x0400;
  static constexpr bool kCountSubnormal = false;  // as check 28 (hash/finite.h)
  static double value(U a) { return hash::half_to_double(a); }
};
struct F32 {
  using U = uint32_t;
  static constexpr U kAbs = 0x7fffffffu, kInf = 0x7f800000u, kMinNormal = 0x00800000u;
  static constexpr bool kCountSubnormal = true;
  static double value(U a) { return std::bit_cast<float>(a); }
};
struct F64 {
  using U = uint64_t;
  static constexpr U kAbs = 0x7fffffffffffffffull, kInf = 0x7ff0000000000000ull, kMinNormal = 0x0010000000000000ull;
  static constexpr bool kCountSubnormal = true;
  static double value(U a) { return std::bit_cast<double>(a); }
};

// Element j of the chunk adds its square to lane j mod kSumLanes, in element
// order; the lanes are then added pairwise: (l0 + l1), (l2 + l3), ..., then
// those pairs, until one sum is left (PROTOCOL 5.2). Every square of a 16-
// or 32-bit value is exact in binary64; an F64 square is rounded once (no
// fused multiply-add: the project builds with -ffp-contract=off). The loop
// over a block of lanes is free of branches, so the compiler keeps each lane
// in a vector element: the order of additions within a lane is unchanged.
template <class T>
[[gnu::always_inline]] inline Part floating_part(const uint8_t *p, size_t n) {
  using U = typename T::U;
  double lanes[kSumLanes] = {};
  // Per-lane counters: a chunk gives a lane at most 1024 elements of 16 bits.
  U max_bits[kSumLanes] = {}, nonfinite[kSumLanes] = {}, subnormal[kSumLanes] = {}, zeros[kSumLanes] = {};
  // The last, partial block is read from a copy padded with +0, which adds
  // nothing; its padding is taken off the zero count below.
  const size_t full = n / kSumLanes, rest = n % kSumLanes;
  U tail[kSumLanes] = {};
  std::memcpy(tail, p + full * kSumLanes * sizeof(U), rest * sizeof(U));
  for (size_t b = 0; b < full + (rest != 0); ++b) {
    U v[kSumLanes];
    std::memcpy(v, b < full ? p + b * kSumLanes * sizeof(U) : reinterpret_cast<const uint8_t *>(tail), sizeof v);
    for (size_t j = 0; j < kSumLanes; ++j) {
      const U a = static_cast<U>(v[j] & T::kAbs);
      const U finite = a < T::kInf ? a : U{0};
      const double x = T::value(finite);
      lanes[j] += x * x;
      max_bits[j] = finite > max_bits[j] ? finite : max_bits[j];
      nonfinite[j] = static_cast<U>(nonfinite[j] + (a >= T::kInf));
      subnormal[j] = static_cast<U>(subnormal[j] + (T::kCountSubnormal && static_cast<U>(a - 1) < T::kMinNormal - 1));
      zeros[j] = static_cast<U>(zeros[j] + (a == 0));
    }
  }
  Part part;
  U max_all = 0;
  for (size_t j = 0; j < kSumLanes; ++j) {
    max_all = max_bits[j] > max_all ? max_bits[j] : max_all;
    part.nonfinite += nonfinite[j];
    part.subnormal += subnormal[j];
    part.zeros += zeros[j];
  }
  if (rest) part.zeros -= kSumLanes - rest;
  for (size_t width = kSumLanes / 2; width >= 1; width /= 2)
    for (size_t j = 0; j < width; ++j) lanes[j] = lanes[2 * j] + lanes[2 * j + 1];
  part.sum_squares = lanes[0];
  part.max_abs = T::value(max_all);
  return part;
}

// F32 (and BF16, whose bits widened by 16 zero bits are the F32 value and
// keep its class: non-finite, subnormal, zero) in explicit vectors of W
// elements, W the width of the path's registers in 32-bit elements (4 for
// the baseline's SSE2, 8 for AVX2, 16 for AVX-512): lane j of a block of
// kSumLanes elements is element W k + i of vector k. The same order of
// additions as floating_part, so the same bits on every path and width.
#if defined(__GNUC__)
// (GCC ignores vector_size on a dependent type: one set of types per width.)
#define POT_VECTOR_TYPES(W)                                    \
  template <>                                                  \
  struct Vec<W> {                                              \
    using U = uint32_t __attribute__((vector_size(4 * (W))));  \
    using F = float __attribute__((vector_size(4 * (W))));     \
    using D = double __attribute__((vector_size(8 * (W))));    \
    using H = uint16_t __attribute__((vector_size(2 * (W))));  \
  }
template <size_t W>
struct Vec;
POT_VECTOR_TYPES(4);
POT_VECTOR_TYPES(8);
POT_VECTOR_TYPES(16);
#undef POT_VECTOR_TYPES

template <bool kBF16, size_t W>
[[gnu::always_inline]] inline Part f32_vector_part(const uint8_t *p, size_t n) {
  using VU = typename Vec<W>::U;
  using VF = typename Vec<W>::F;
  using VD = typename Vec<W>::D;
  using VH = typename Vec<W>::H;
  constexpr size_t kVectors = kSumLanes / W;
  constexpr size_t esize = kBF16 ? 2 : 4;
  static_assert(F32::kCountSubnormal, "F32 and BF16 subnormals are counted, as check 28 counts them");
  VD sum[kVectors] = {};
  VU max_bits[kVectors] = {}, nonfinite[kVectors] = {}, subnormal[kVectors] = {}, zeros[kVectors] = {};
  const size_t full = n / kSumLanes, rest = n % kSumLanes;
  uint8_t tail[kSumLanes * esize] = {};
  std::memcpy(tail, p + full * kSumLanes * esize, rest * esize);
  for (size_t b = 0; b < full + (rest != 0); ++b) {
    const uint8_t *q = b < full ? p + b * kSumLanes * esize : tail;
    for (size_t k = 0; k < kVectors; ++k) {
      VU v;
      if constexpr (kBF16) {
        VH h;
        std::memcpy(&h, q + k * W * 2, W * 2);
        v = __builtin_convertvector(h, VU) << 16;
      } else {
        std::memcpy(&v, q + k * W * 4, W * 4);
      }
      const VU a = v & F32::kAbs;
      const VU finite = a & reinterpret_cast<VU>(a < F32::kInf);  // comparisons give 0 or all ones
      const VD x = __builtin_convertvector(reinterpret_cast<VF>(finite), VD);
      sum[k] += x * x;
      max_bits[k] = finite > max_bits[k] ? finite : max_bits[k];
      nonfinite[k] -= reinterpret_cast<VU>(a >= F32::kInf);
      subnormal[k] -= reinterpret_cast<VU>(a - 1u < F32::kMinNormal - 1u);
      zeros[k] -= reinterpret_cast<VU>(a == 0u);
    }
  }
  Part part;
  double lanes[kSumLanes];
  uint32_t max_all = 0;
  for (size_t j = 0; j < kSumLanes; ++j) {
    lanes[j] = sum[j / W][j % W];
    max_all = std::max(max_all, max_bits[j / W][j % W]);
    part.nonfinite += nonfinite[j / W][j % W];
    part.subnormal += subnormal[j / W][j % W];
    part.zeros += zeros[j / W][j % W];
  }
  if (rest) part.zeros -= kSumLanes - rest;
  for (size_t width = kSumLanes / 2; width >= 1; width /= 2)
    for (size_t j = 0; j < width; ++j) lanes[j] = lanes[2 * j] + lanes[2 * j + 1];
  part.sum_squares = lanes[0];
  part.max_abs = std::bit_cast<float>(max_all);
  return part;
}
// Compiled for AVX-512, AVX2 and the baseline, and picked once by what the
// CPU has. Dispatched by hand, not by target_clones: its ifunc resolvers run
// before ThreadSanitizer's runtime is up, and the TSan build crashed at start.
using PartFn = Part (*)(const uint8_t *, size_t);
struct Kernels {
  PartFn f32, bf16;
};
Part f32_base(const uint8_t *p, size_t n) { return f32_vector_part<false, 4>(p, n); }
Part bf16_base(const uint8_t *p, size_t n) { return f32_vector_part<true, 4>(p, n); }
#if defined(__x86_64__)
[[gnu::target("avx2")]] Part f32_avx2(const uint8_t *p, size_t n) { return f32_vector_part<false, 8>(p, n); }
[[gnu::target("avx2")]] Part bf16_avx2(const uint8_t *p, size_t n) { return f32_vector_part<true, 8>(p, n); }
[[gnu::target("avx512f")]] Part f32_avx512(const uint8_t *p, size_t n) { return f32_vector_part<false, 16>(p, n); }
[[gnu::target("avx512f")]] Part bf16_avx512(const uint8_t *p, size_t n) { return f32_vector_part<true, 16>(p, n); }
#endif
const Kernels &kernels() {
  static const Kernels k = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return Kernels{f32_avx512, bf16_avx512};
    if (__builtin_cpu_supports("avx2")) return Kernels{f32_avx2, bf16_avx2};
#endif
    return Kernels{f32_base, bf16_base};
  }();
  return k;
}
Part f32_part(const uint8_t *p, size_t n) { return kernels().f32(p, n); }
Part bf16_part(const uint8_t *p, size_t n) { return kernels().bf16(p, n); }
// Every path this CPU can run, by name.
std::vector<std::pair<std::string, Kernels>> every_kernel() {
  std::vector<std::pair<std::string, Kernels>> out = {{"baseline", {f32_base, bf16_base}}};
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) out.push_back({"avx2", {f32_avx2, bf16_avx2}});
  if (__builtin_cpu_supports("avx512f")) out.push_back({"avx512f", {f32_avx512, bf16_avx512}});
#endif
  return out;
}
#else
struct BF16 {
  using U = uint16_t;
  static constexpr U kAbs = 0x7fff, kInf = 0x7f80, kMinNormal = 0x0080;
  static constexpr bool kCountSubnormal = true;
  static double value(U a) { return std::bit_cast<float>(static_cast<uint32_t>(a) << 16); }
};
Part f32_part(const uint8_t *p, size_t n) { return floating_part<F32>(p, n); }
Part bf16_part(const uint8_t *p, size_t n) { return floating_part<BF16>(p, n); }
#endif

Part other_part(const uint8_t *p, size_t n, size_t esize) {
  Part part;
  for (size_t i = 0; i < n; ++i) {
    bool zero = true;
    for (size_t k = 0; k < esize; ++k) zero = zero && p[i * esize + k] == 0;
    part.zeros += zero;
  }
  return part;
}

Part chunk_part(DType d, ByteView bytes) {
  const size_t esize = hash::dtype_size(d);
  const size_t n = bytes.size() / esize;
  switch (d) {
    case DType::kF16: return floating_part<F16>(bytes.data(), n);
    case DType::kBF16: return bf16_part(bytes.data(), n);
    case DType::kF32: return f32_part(bytes.data(), n);
    case DType::kF64: return floating_part<F64>(bytes.data(), n);
    default: return other_part(bytes.data(), n, esize);
  }
}

// Work items: up to kBlockChunks consecutive chunks of one tensor.
constexpr uint64_t kBlockChunks = 64;

struct Item {
  size_t tensor;
  uint64_t first_chunk;
  uint64_t chunks;
};

}  // namespace

std::vector<std::string> kernel_paths_agree(hash::DType d, ByteView bytes) {
  std::vector<std::string> ran;
#if defined(__GNUC__)
  if (d != DType::kF32 && d != DType::kBF16) fail(Status::kInvalidArgument, "only F32 and BF16 run in vectors");
  const size_t n = bytes.size() / hash::dtype_size(d);
  std::optional<Part> first;
  for (const auto &[name, k] : every_kernel()) {
    const Part p = (d == DType::kF32 ? k.f32 : k.bf16)(bytes.data(), n);
    if (first && (std::bit_cast<uint64_t>(p.sum_squares) != std::bit_cast<uint64_t>(first->sum_squares) ||
                  std::bit_cast<uint64_t>(p.max_abs) != std::bit_cast<uint64_t>(first->max_abs) ||
                  p.nonfinite != first->nonfinite || p.subnormal != first->subnormal || p.zeros != first->zeros))
      fail(Status::kInternal, "the {} path differs from the baseline", name);
    if (!first) first = p;
    ran.push_back(name);
  }
#else
  (void)d;
  (void)bytes;
#endif
  return ran;
}

namespace {

// Checks the tensors (name order, meta, byte lengths) and sizes one Part per
// chunk of each.
std::vector<std::vector<Part>> chunk_slots(const std::vector<hash::StTensor> &tensors) {
  std::vector<std::vector<Part>> parts(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (t > 0 && !(tensors[t - 1].meta.name < tensors[t].meta.name))
      fail(Status::kInvalidArgument, "tensor '{}' is out of name order or repeated", tensors[t].meta.name);
    const uint64_t want = hash::validate_meta(tensors[t].meta);
    if (tensors[t].data.size() != want)
      fail(Status::kInvalidArgument, "tensor '{}': {} bytes given, dtype and shape imply {}", tensors[t].meta.name,
           tensors[t].data.size(), want);
    parts[t].resize(hash::chunk_count(want));
  }
  return parts;
}

// The table from every chunk's Part, the chunks of a tensor in order.
StateStats combine(const std::vector<hash::StTensor> &tensors, const std::vector<std::vector<Part>> &parts) {
  StateStats out;
  out.tensors.reserve(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    TensorStats s;
    s.name = tensors[t].meta.name;
    s.dtype = tensors[t].meta.dtype;
    s.elements = tensors[t].data.size() / hash::dtype_size(s.dtype);
    double sum = 0;  // the chunks' sums, in chunk order
    for (const Part &p : parts[t]) {
      sum += p.sum_squares;
      s.max_abs = std::max(s.max_abs, p.max_abs);
      s.nonfinite += p.nonfinite;
      s.subnormal += p.subnormal;
      s.zeros += p.zeros;
    }
    s.l2_norm = std::sqrt(sum);
    out.tensors.push_back(std::move(s));
  }
  return out;
}

}  // namespace

StateStats state_stats(const std::vector<hash::StTensor> &tensors, unsigned threads) {
  std::vector<std::vector<Part>> parts = chunk_slots(tensors);
  std::vector<Item> items;
  for (size_t t = 0; t < tensors.size(); ++t)
    for (uint64_t c = 0; c < parts[t].size(); c += kBlockChunks)
      items.push_back(Item{t, c, std::min<uint64_t>(kBlockChunks, parts[t].size() - c)});
  hash::parallel_for(items.size(), threads, [&](size_t i) {
    const Item &it = items[i];
    const hash::StTensor &t = tensors[it.tensor];
    for (uint64_t c = it.first_chunk; c < it.first_chunk + it.chunks; ++c) {
      const uint64_t off = c * hash::kChunkSize;
      const uint64_t len = std::min<uint64_t>(hash::kChunkSize, t.data.size() - off);
      parts[it.tensor][c] = chunk_part(t.meta.dtype, t.data.subspan(off, len));
    }
  });
  return combine(tensors, parts);
}

DigestedState digest_and_stats(const std::vector<hash::StTensor> &tensors, unsigned threads) {
  std::vector<std::vector<Part>> parts = chunk_slots(tensors);
  std::vector<hash::ChunkJob> jobs;
  jobs.reserve(tensors.size());
  for (const hash::StTensor &t : tensors) jobs.push_back(hash::ChunkJob{t.data, 0});
  // Each chunk's Part is computed right after its hash, from the cache.
  const std::vector<hash::Accumulator> roots =
      hash::hash_chunks(jobs, threads, [&](size_t job, uint64_t chunk, ByteView bytes) {
        parts[job][chunk] = chunk_part(tensors[job].meta.dtype, bytes);
      });
  DigestedState out;
  out.tensor_digests.reserve(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t)
    out.tensor_digests.push_back(hash::tensor_digest(tensors[t].meta, tensors[t].data.size(), roots[t].root()));
  out.stats = combine(tensors, parts);
  return out;
}

StateStats state_stats(const hash::SafetensorsFile &file, unsigned threads) {
  return state_stats(hash::tensor_views(file), threads);
}

TensorStats tensor_stats(const hash::StTensor &tensor, unsigned threads) {
  return std::move(state_stats({tensor}, threads).tensors.front());
}

namespace {

bool floating(DType d) { return d == DType::kF16 || d == DType::kBF16 || d == DType::kF32 || d == DType::kF64; }

// u32le name length, the name, u8 dtype, six u64le.
constexpr size_t kMinRecordBytes = 4 + 1 + 1 + 6 * 8;

}  // namespace

Bytes StateStats::encode() const {
  Bytes out;
  put_u32le(out, static_cast<uint32_t>(tensors.size()));
  for (const TensorStats &s : tensors) {
    put_u32le(out, static_cast<uint32_t>(s.name.size()));
    put_str(out, s.name);
    put_u8(out, static_cast<uint8_t>(s.dtype));
    put_u64le(out, s.elements);
    put_u64le(out, std::bit_cast<uint64_t>(s.max_abs));
    put_u64le(out, std::bit_cast<uint64_t>(s.l2_norm));
    put_u64le(out, s.nonfinite);
    put_u64le(out, s.subnormal);
    put_u64le(out, s.zeros);
  }
  return out;
}

namespace {

void check_record(const TensorStats &s, const std::string *previous_name) {
  if (s.name.empty() || s.name.size() > hash::kMaxNameBytes || s.name.find('\0') != std::string::npos ||
      !is_valid_utf8(s.name))
    fail(Status::kMalformed, "state statistics: a tensor name is empty, over {} bytes, holds NUL or is not UTF-8",
         hash::kMaxNameBytes);
  if (previous_name && !(*previous_name < s.name))
    fail(Status::kMalformed, "state statistics: tensor '{}' is out of name order or repeated", s.name);
  const size_t esize = hash::dtype_size(s.dtype);
  if (!esize) fail(Status::kMalformed, "state statistics: tensor '{}' has an unknown dtype", s.name);
  if (s.elements > UINT64_MAX / esize)
    fail(Status::kMalformed, "state statistics: tensor '{}' has more elements than 64-bit bytes can hold", s.name);
  const uint64_t max_bits = std::bit_cast<uint64_t>(s.max_abs), l2_bits = std::bit_cast<uint64_t>(s.l2_norm);
  if (max_bits >> 63 || !std::isfinite(s.max_abs) || l2_bits >> 63 || std::isnan(s.l2_norm))
    fail(Status::kMalformed, "state statistics: tensor '{}' has a negative, NaN or infinite magnitude", s.name);
  if (!floating(s.dtype) && (max_bits || l2_bits || s.nonfinite || s.subnormal))
    fail(Status::kMalformed, "state statistics: tensor '{}' is not floating point but has magnitudes", s.name);
  // Disjoint counts; for a floating type each is below 2^63, so the sum fits.
  if (s.nonfinite > s.elements || s.subnormal > s.elements || s.zeros > s.elements ||
      s.nonfinite + s.subnormal > s.elements - s.zeros)
    fail(Status::kMalformed, "state statistics: tensor '{}' counts more elements than it has", s.name);
  if (s.dtype == DType::kF16 && s.subnormal)
    fail(Status::kMalformed, "state statistics: tensor '{}' is F16, whose subnormals are not counted", s.name);
}

}  // namespace

StateStats StateStats::decode(ByteView b) {
  if (b.size() < 4) fail(Status::kMalformed, "state statistics: {} bytes, shorter than the count", b.size());
  const uint64_t count = get_u32le(b.data());
  if (count > hash::kMaxTensors)
    fail(Status::kLimit, "state statistics of {} tensors; a state holds at most {}", count, hash::kMaxTensors);
  if (count * kMinRecordBytes > b.size() - 4)
    fail(Status::kMalformed, "state statistics: {} bytes cannot hold {} tensors", b.size(), count);
  StateStats out;
  out.tensors.reserve(count);
  size_t pos = 4;
  auto need = [&](size_t n) {
    if (b.size() - pos < n) fail(Status::kMalformed, "state statistics: truncated at byte {}", pos);
  };
  for (uint64_t i = 0; i < count; ++i) {
    need(4);
    const uint32_t len = get_u32le(b.data() + pos);
    pos += 4;
    need(size_t{len} + 1 + 6 * 8);
    TensorStats s;
    s.name.assign(reinterpret_cast<const char *>(b.data() + pos), len);
    pos += len;
    s.dtype = static_cast<DType>(b[pos++]);
    uint64_t v[6];
    for (uint64_t &x : v) {
      x = get_u64le(b.data() + pos);
      pos += 8;
    }
    s.elements = v[0];
    s.max_abs = std::bit_cast<double>(v[1]);
    s.l2_norm = std::bit_cast<double>(v[2]);
    s.nonfinite = v[3];
    s.subnormal = v[4];
    s.zeros = v[5];
    check_record(s, out.tensors.empty() ? nullptr : &out.tensors.back().name);
    out.tensors.push_back(std::move(s));
  }
  if (pos != b.size()) fail(Status::kMalformed, "state statistics: {} bytes after the last tensor", b.size() - pos);
  return out;
}

hash::Digest table_digest(ByteView table) {
  hash::Sha256 h;
  hash::begin_tagged(h, kTagStateStats);
  h.update(table);
  return h.finish();
}

hash::Digest StateStats::digest() const { return table_digest(encode()); }

std::string StateStats::to_json() const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const TensorStats &s : tensors)
    list.push_back({{"name", s.name},
                    {"dtype", std::string(hash::dtype_name(s.dtype))},
                    {"elements", s.elements},
                    {"max_abs", s.max_abs},
                    // null when the sum of squares overflows binary64 (F64 only)
                    {"l2_norm", std::isinf(s.l2_norm) ? nlohmann::ordered_json() : nlohmann::ordered_json(s.l2_norm)},
                    {"nonfinite", s.nonfinite},
                    {"subnormal", s.subnormal},
                    {"zeros", s.zeros}});
  nlohmann::ordered_json j;
  j["tensors"] = std::move(list);
  j["digest"] = digest().hex();
  return j.dump();
}

bool StateStats::any(uint64_t TensorStats::*count) const {
  return std::ranges::any_of(tensors, [&](const TensorStats &s) { return s.*count != 0; });
}

const TensorStats *StateStats::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorStats &s, std::string_view n) { return s.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

}  // namespace pot::statecheck
