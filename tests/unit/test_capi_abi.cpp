// pot.h's ABI rules as a caller meets them: the struct_size of result
// structs (a struct too small for this header is refused, one larger than
// it keeps its later bytes), and the step input's own checks (its entry,
// each sample, the count), which need no LibTorch.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "pot.h"

namespace {

// The error's message (the call sets *err: passed by address, so it is
// read after the call whatever the order arguments are evaluated in).
std::string message_of(pot_status s, pot_error **err, pot_status want) {
  EXPECT_EQ(s, want);
  std::string m = *err ? pot_error_message(*err) : "";
  pot_error_free(*err);
  *err = nullptr;
  return m;
}

pot_bisection *bisection() {
  pot_digest agreed{}, a{}, b{};
  a.bytes[0] = 1;
  b.bytes[0] = 2;
  pot_bisection *out = nullptr;
  EXPECT_EQ(pot_bisection_new(&out, 0, 10, 2, &agreed, &a, &b, nullptr), POT_OK);
  return out;
}

std::vector<uint8_t> entry_of(uint64_t step, std::vector<uint64_t> indices) {
  const uint32_t sizes[] = {static_cast<uint32_t>(indices.size())};
  pot_bytes b{};
  EXPECT_EQ(pot_schedule_entry_encode(&b, step, indices.data(), indices.size(), sizes, 1, 100, nullptr), POT_OK);
  std::vector<uint8_t> v(b.data, b.data + b.len);
  pot_bytes_free(&b);
  return v;
}

std::vector<uint8_t> sample() {
  pot_safetensors_writer *w = nullptr;
  EXPECT_EQ(pot_safetensors_writer_new(&w, nullptr), POT_OK);
  const float x[2] = {1.0f, 2.0f};
  const uint64_t shape[] = {2};
  EXPECT_EQ(pot_safetensors_writer_add(w, "x", POT_DTYPE_F32, shape, 1, x, sizeof x, nullptr), POT_OK);
  pot_bytes b{};
  EXPECT_EQ(pot_safetensors_writer_bytes(&b, w, nullptr), POT_OK);
  pot_safetensors_writer_free(w);
  std::vector<uint8_t> v(b.data, b.data + b.len);
  pot_bytes_free(&b);
  return v;
}

}  // namespace

TEST(CApiAbi, AResultStructWithoutItsSizeIsRefusedUntouched) {
  pot_bisection *b = bisection();
  // A caller that forgot to set struct_size (zeroed, as 0.1 callers did).
  pot_bisection_info info;
  std::memset(&info, 0xAB, sizeof info);
  info.struct_size = 0;
  pot_error *err = nullptr;
  const std::string m = message_of(pot_bisection_info_get(&info, b, &err), &err, POT_E_INVALID_ARGUMENT);
  EXPECT_NE(m.find("struct_size is 0"), std::string::npos) << m;
  EXPECT_NE(m.find("POT_BISECTION_INFO_INIT"), std::string::npos) << m;
  EXPECT_EQ(info.lo, 0xABABABABABABABABull);  // nothing written
  // One byte short of this header's struct.
  info.struct_size = sizeof info - 1;
  message_of(pot_bisection_info_get(&info, b, &err), &err, POT_E_INVALID_ARGUMENT);
  pot_bisection_free(b);
}

TEST(CApiAbi, AResultStructLargerThanThisHeaderKeepsItsLaterFields) {
  // A program built against a later header with more fields: libpot
  // writes this header's fields and leaves the rest as they were.
  struct Later {
    pot_bisection_info info;
    uint64_t later_field;
  } later;
  std::memset(&later, 0xCD, sizeof later);
  later.info.struct_size = sizeof later;
  pot_bisection *b = bisection();
  ASSERT_EQ(pot_bisection_info_get(&later.info, b, nullptr), POT_OK);
  EXPECT_EQ(later.info.struct_size, sizeof later);  // the caller's, kept
  EXPECT_EQ(later.info.lo, 0u);
  EXPECT_EQ(later.info.hi, 10u);
  EXPECT_EQ(later.info.arity, 2u);
  EXPECT_EQ(later.later_field, 0xCDCDCDCDCDCDCDCDull);
  pot_bisection_free(b);
}

TEST(CApiAbi, InitialisersSetTheSize) {
  const pot_bisection_info b = POT_BISECTION_INFO_INIT;
  const pot_replay_result r = POT_REPLAY_RESULT_INIT;
  const pot_verify_result v = POT_VERIFY_RESULT_INIT;
  EXPECT_EQ(b.struct_size, sizeof b);
  EXPECT_EQ(r.struct_size, sizeof r);
  EXPECT_EQ(v.struct_size, sizeof v);
  // The size field comes first, where every later layout keeps it.
  EXPECT_EQ(offsetof(pot_bisection_info, struct_size), 0u);
  EXPECT_EQ(offsetof(pot_replay_result, struct_size), 0u);
  EXPECT_EQ(offsetof(pot_verify_result, struct_size), 0u);
}

TEST(CApiAbi, AStepInputHoldsOneParsedSamplePerIndex) {
  const std::vector<uint8_t> entry = entry_of(7, {3, 5});
  pot_digest run{};
  pot_step_input *in = nullptr;
  ASSERT_EQ(pot_step_input_new(&in, &run, "/nonexistent/pre.safetensors", entry.data(), entry.size(), nullptr),
            POT_OK);
  EXPECT_EQ(pot_step_input_step(in), 7u);
  EXPECT_EQ(pot_step_input_sample_count(in), 0u);
  const std::vector<uint8_t> good = sample();
  ASSERT_EQ(pot_step_input_add_sample(in, good.data(), good.size(), nullptr), POT_OK);
  // A sample that is not safetensors: refused naming its position and
  // dataset index, and not added.
  const std::vector<uint8_t> junk(good.begin(), good.begin() + 5);
  pot_error *err = nullptr;
  std::string m = message_of(pot_step_input_add_sample(in, junk.data(), junk.size(), &err), &err, POT_E_MALFORMED);
  EXPECT_NE(m.find("sample 1 (dataset index 5)"), std::string::npos) << m;
  EXPECT_EQ(pot_step_input_sample_count(in), 1u);
  ASSERT_EQ(pot_step_input_add_sample(in, good.data(), good.size(), nullptr), POT_OK);
  // A third sample for an entry of two indices.
  m = message_of(pot_step_input_add_sample(in, good.data(), good.size(), &err), &err, POT_E_OUT_OF_RANGE);
  EXPECT_NE(m.find("lists 2 samples"), std::string::npos) << m;
  EXPECT_EQ(pot_step_input_sample_count(in), 2u);
  pot_step_input_free(in);
  pot_step_input_free(nullptr);
  EXPECT_EQ(pot_step_input_sample_count(nullptr), 0u);
}

TEST(CApiAbi, AStepInputRefusesABadEntryAndMissingArguments) {
  const std::vector<uint8_t> entry = entry_of(2, {1});
  pot_step_input *in = nullptr;
  pot_error *err = nullptr;
  message_of(pot_step_input_new(&in, nullptr, "pre", entry.data(), entry.size() - 1, &err), &err, POT_E_MALFORMED);
  EXPECT_EQ(in, nullptr);
  std::string m =
      message_of(pot_step_input_new(&in, nullptr, nullptr, entry.data(), entry.size(), &err), &err,
                 POT_E_INVALID_ARGUMENT);
  EXPECT_NE(m.find("pre_state_path"), std::string::npos) << m;
  message_of(pot_step_input_add_sample(nullptr, entry.data(), entry.size(), &err), &err, POT_E_INVALID_ARGUMENT);
}

TEST(CApiAbi, ReplayCallsTakeTheStepInput) {
  // Without the replay module (or LibTorch) the call says so; with it, a
  // NULL replay is refused: either way the input is checked for NULL
  // before anything runs.
  const std::vector<uint8_t> entry = entry_of(2, {1});
  pot_step_input *in = nullptr;
  ASSERT_EQ(pot_step_input_new(&in, nullptr, "pre", entry.data(), entry.size(), nullptr), POT_OK);
  pot_replay_result r = POT_REPLAY_RESULT_INIT;
  pot_error *err = nullptr;
  const pot_status s = pot_replay_step(&r, nullptr, in, nullptr, &err);
  pot_error_free(err);
  EXPECT_TRUE(s == POT_E_INVALID_ARGUMENT || s == POT_E_UNSUPPORTED) << s;
  pot_step_input_free(in);
}

TEST(CApiAbi, TheStatusListIsLibpots) {
  // Every status below pot_status_count() has its own name; the count is
  // the first without one. The bindings check their lists against this.
  const uint32_t n = pot_status_count();
  EXPECT_EQ(n, static_cast<uint32_t>(POT_E_NONFINITE) + 1);
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) {
    names.emplace_back(pot_status_name(static_cast<pot_status>(i)));
    EXPECT_NE(names.back(), "POT_E_UNKNOWN") << i;
  }
  EXPECT_EQ(names.front(), "POT_OK");
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_STREQ(pot_status_name(static_cast<pot_status>(n)), "POT_E_UNKNOWN");
}

TEST(CApiAbi, StatePartNamesAreTheProtocols) {
  // docs/PROTOCOL.md 21.1, written out here independently of libpot.
  EXPECT_STREQ(pot_state_part_name(POT_STATE_PARAM_PREFIX), "param/");
  EXPECT_STREQ(pot_state_part_name(POT_STATE_BUFFER_PREFIX), "buffer/");
  EXPECT_STREQ(pot_state_part_name(POT_STATE_OPTIM_PREFIX), "optim/");
  EXPECT_STREQ(pot_state_part_name(POT_STATE_LR), "hparam/lr");
  EXPECT_STREQ(pot_state_part_name(POT_STATE_RNG), "rng/cpu");
  EXPECT_STREQ(pot_state_part_name(POT_STATE_GRAD_PREFIX), "grad/");
  EXPECT_EQ(pot_state_part_name(static_cast<pot_state_part>(0)), nullptr);
  EXPECT_EQ(pot_state_part_name(static_cast<pot_state_part>(7)), nullptr);
  EXPECT_EQ(pot_state_part_name(static_cast<pot_state_part>(-1)), nullptr);
}
