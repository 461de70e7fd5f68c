// Tasks: JSON in, canonical bytes out, one precise error per rule, strict
// decoding (another protocol version named, not misread), and the check
// that a commitment is one its task admits, naming the first field that
// differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "commit/dataset.h"
#include "core_test_util.h"
#include "hash/rfc6962.h"
#include "pot/v2/task.pb.h"
#include "task/task.h"
#include "task_test_util.h"

using namespace pot;
using pot::test::status_of;

namespace {

// The status and message a call throws with ("accepted" when it returns).
std::pair<Status, std::string> outcome(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return {e.status(), e.what()};
  }
  return {Status::kOk, "accepted"};
}

Bytes raw_with(const task::Task &t, const std::function<void(v2::Task &)> &change) {
  const Bytes b = t.encode();
  v2::Task p;
  EXPECT_TRUE(p.ParseFromArray(b.data(), static_cast<int>(b.size())));
  change(p);
  const std::string s = p.SerializeAsString();
  return Bytes(s.begin(), s.end());
}

}  // namespace

TEST(Task, JsonRoundTripCanonicalBytesAndId) {
  const task::Task t = test::test_task();
  const Bytes b = t.encode();
  const task::Task back = task::Task::decode(b);
  EXPECT_EQ(back.encode(), b);
  EXPECT_EQ(back.id(), t.id());
  EXPECT_EQ(back.to_json(), t.to_json());
  EXPECT_EQ(task::Task::from_json(t.to_json()).encode(), b);
  EXPECT_EQ(t.to_json()["protocol_version"], 2);
  EXPECT_EQ(t.to_json()["challenge_policy"]["mode"], "bitwise");
  // The id is tagged("pot/v2/task", canonical bytes).
  hash::Sha256 h;
  hash::begin_tagged(h, "pot/v2/task");
  EXPECT_EQ(h.update(b).finish(), t.id());
  // Every field moves the id.
  const std::vector<std::function<void(task::Task &)>> changes = {
      [](task::Task &x) { x.owner.push_back('2'); },
      [](task::Task &x) { x.spec.optimizer.lr *= 2; },
      [](task::Task &x) { x.dataset_root.bytes[0] ^= 1; },
      [](task::Task &x) { x.dataset_size += 1; },
      [](task::Task &x) { x.initial_state_digest.bytes[0] ^= 1; },
      [](task::Task &x) { x.schedule_root.bytes[0] ^= 1; },
      [](task::Task &x) { x.min_steps = x.max_steps = 9; },
      [](task::Task &x) { x.challenge_rounds = 2; },
      [](task::Task &x) { x.challenge_mode = task::ChallengeMode::kNormBucket; },
      [](task::Task &x) { x.committee_size = 3; },
      [](task::Task &x) { x.end_height = 1000; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    task::Task x = t;
    changes[i](x);
    EXPECT_NE(x.id(), t.id()) << "change " << i;
  }
}

TEST(Task, EachRuleHasItsOwnMessage) {
  struct Case {
    std::function<void(task::Task &)> change;
    Status status;
    const char *expect;
  };
  const Case cases[] = {
      {[](task::Task &t) { t.protocol_version = 1; }, Status::kUnsupported, "protocol version 1 is not supported"},
      {[](task::Task &t) { t.owner.clear(); }, Status::kInvalidArgument, "owner must be 1..256 bytes"},
      {[](task::Task &t) { t.owner.assign(257, 'o'); }, Status::kInvalidArgument, "owner must be 1..256 bytes"},
      {[](task::Task &t) { t.spec.intra_op_threads = 0; }, Status::kInvalidArgument, "spec:"},
      {[](task::Task &t) { t.dataset_size = 0; }, Status::kInvalidArgument, "dataset_size must be at least 1"},
      {[](task::Task &t) { t.min_steps = 0; }, Status::kInvalidArgument, "min_steps must be at least 1"},
      {[](task::Task &t) { t.max_steps = 7; }, Status::kInvalidArgument, "max_steps 7 is below min_steps 8"},
      {[](task::Task &t) { t.max_steps = 9; }, Status::kInvalidArgument, "a listed schedule fixes the number of steps"},
      {[](task::Task &t) { t.challenge_rounds = 0; }, Status::kInvalidArgument, "challenge_policy.rounds = 0"},
      {[](task::Task &t) { t.challenge_rounds = 9; }, Status::kInvalidArgument, "exceeds min_steps 8"},
      {[](task::Task &t) { t.challenge_mode = static_cast<task::ChallengeMode>(3); }, Status::kInvalidArgument,
       "challenge_policy.mode 3"},
      {[](task::Task &t) { t.committee_size = 0; }, Status::kInvalidArgument, "committee_size = 0 is outside 1..1024"},
      {[](task::Task &t) { t.committee_size = 1025; }, Status::kInvalidArgument, "committee_size = 1025"},
      // A draft of protocol 2 without an end (field 11 absent reads 0).
      {[](task::Task &t) { t.end_height = 0; }, Status::kInvalidArgument, "end_height must be at least 1"},
  };
  for (const Case &c : cases) {
    task::Task t = test::test_task();
    c.change(t);
    const auto [status, message] = outcome([&] { t.validate(); });
    EXPECT_EQ(status, c.status) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message << " // expected: " << c.expect;
  }
  // A listed task whose steps draw no per-run randomness is valid since
  // 0.3.0: its runs are one trajectory, which the ledger pays once
  // (docs/ledger.md 2.3); before, it was refused (round 2, attack 5).
  const std::function<void(task::Task &)> one_trajectory[] = {
      [](task::Task &t) { t.spec.dropout = 0; },
      [](task::Task &t) { t.spec.seed_policy = spec::SeedPolicyKind::kSingleSeed; },
      [](task::Task &t) {
        t.spec.dropout = 0;
        t.spec.seed_policy = spec::SeedPolicyKind::kNone;
        t.spec.seed = 0;
      }};
  for (const auto &change : one_trajectory) {
    task::Task t = test::test_task();
    EXPECT_FALSE(t.one_trajectory());
    change(t);
    t.validate();
    EXPECT_TRUE(t.one_trajectory());
  }
  task::Task seeded = test::test_task();
  seeded.schedule_rule = task::ScheduleRule::kRunSeeded;
  seeded.schedule_root = {};
  seeded.spec.dropout = 0;
  EXPECT_FALSE(seeded.one_trajectory());  // each run draws its own order
}

TEST(Task, StrictDecoding) {
  const task::Task t = test::test_task();
  const Bytes b = t.encode();
  EXPECT_EQ(status_of([&] { task::Task::decode(Bytes(task::kMaxTaskBytes + 1)); }), Status::kLimit);
  for (size_t n = 0; n < b.size(); ++n)
    EXPECT_NE(status_of([&] { task::Task::decode(ByteView(b).first(n)); }), Status::kOk) << "prefix " << n;
  Bytes extra = b;
  extra.push_back(0x78);  // field 15, varint
  extra.push_back(1);
  EXPECT_EQ(status_of([&] { task::Task::decode(extra); }), Status::kMalformed);
  // Another version is named before any field is read.
  const auto [status, message] =
      outcome([&] { task::Task::decode(raw_with(t, [](v2::Task &p) { p.set_protocol_version(1); })); });
  EXPECT_EQ(status, Status::kUnsupported);
  EXPECT_NE(message.find("protocol version 1"), std::string::npos) << message;
  // Missing rules, a non-canonical embedded spec, a short digest.
  EXPECT_EQ(status_of([&] { task::Task::decode(raw_with(t, [](v2::Task &p) { p.clear_initial_state(); })); }),
            Status::kMalformed);
  EXPECT_EQ(status_of([&] { task::Task::decode(raw_with(t, [](v2::Task &p) { p.clear_schedule(); })); }),
            Status::kMalformed);
  EXPECT_EQ(status_of([&] { task::Task::decode(raw_with(t, [](v2::Task &p) { p.mutable_spec()->push_back(0); })); }),
            Status::kMalformed);
  EXPECT_EQ(
      status_of([&] { task::Task::decode(raw_with(t, [](v2::Task &p) { p.mutable_dataset_root()->pop_back(); })); }),
      Status::kMalformed);
  EXPECT_EQ(status_of([&] {
              task::Task::decode(raw_with(t, [](v2::Task &p) { p.mutable_challenge_policy()->set_mode(v2::ChallengeMode(5)); }));
            }),
            Status::kInvalidArgument);
  // A draft task without end_height (field 11) is refused, naming it.
  const auto [no_end, why] = outcome([&] { task::Task::decode(raw_with(t, [](v2::Task &p) { p.clear_end_height(); })); });
  EXPECT_EQ(no_end, Status::kInvalidArgument);
  EXPECT_NE(why.find("end_height"), std::string::npos) << why;
}

TEST(Task, JsonIsReadStrictly) {
  const nlohmann::json j = test::test_task().to_json();
  auto with = [&](const std::string &pointer, const nlohmann::json &v) {
    nlohmann::json k = j;
    k[nlohmann::json::json_pointer(pointer)] = v;
    return outcome([&] { task::Task::from_json(k); });
  };
  EXPECT_EQ(with("/extra", 1).first, Status::kInvalidArgument);
  EXPECT_EQ(with("/challenge_policy/mode", "bits").first, Status::kInvalidArgument);
  EXPECT_EQ(with("/challenge_policy/extra", 1).first, Status::kInvalidArgument);
  EXPECT_EQ(with("/initial_state/seeded", true).first, Status::kInvalidArgument);
  EXPECT_EQ(with("/schedule/listed_root", "abc").first, Status::kInvalidArgument);
  EXPECT_EQ(with("/protocol_version", 1).first, Status::kUnsupported);
  EXPECT_EQ(with("/end_height", -1).first, Status::kInvalidArgument);
  EXPECT_EQ(with("/end_height", 0).first, Status::kInvalidArgument);
  for (const char *key : {"min_steps", "end_height"}) {
    nlohmann::json missing = j;
    missing.erase(key);
    EXPECT_EQ(status_of([&] { task::Task::from_json(missing); }), Status::kInvalidArgument) << key;
  }
}

TEST(Task, CheckCommitmentNamesTheFirstFieldThatDiffers) {
  const task::Task t = test::test_task();
  const Bytes miner = {'m'};
  const commit::TrainingCommitment good = test::commitment_for(t, miner);
  EXPECT_EQ(status_of([&] { task::check_commitment(t, good); }), Status::kOk);
  struct Case {
    std::function<void(commit::TrainingCommitment &)> change;
    Status status;
    const char *field;
  };
  const Case cases[] = {
      {[](auto &c) { c.task_id.bytes[0] ^= 1; }, Status::kInvalidArgument, "task_id is"},
      {[](auto &c) { c.initial_state_digest.bytes[0] ^= 1; }, Status::kInvalidArgument, "initial_state_digest is"},
      {[](auto &c) { c.schedule_root.bytes[0] ^= 1; }, Status::kInvalidArgument, "schedule_root is"},
      {[](auto &c) { c.dataset_root.bytes[0] ^= 1; }, Status::kInvalidArgument, "dataset_root is"},
      {[](auto &c) { c.dataset_size = 1; }, Status::kInvalidArgument, "dataset_size is 1, the task fixes 1000"},
      {[](auto &c) { c.spec_digest.bytes[0] ^= 1; }, Status::kInvalidArgument, "spec_digest is"},
      {[](auto &c) { c.declared_steps = 20000; }, Status::kOutOfRange, "declared_steps 20000 is outside 8..8"},
      {[](auto &c) { c.declared_steps = 7; }, Status::kOutOfRange, "declared_steps 7 is outside 8..8"},
      // Two fields differ: the first in the documented order is named.
      {[](auto &c) {
         c.spec_digest.bytes[0] ^= 1;
         c.schedule_root.bytes[0] ^= 1;
       },
       Status::kInvalidArgument, "schedule_root is"},
  };
  for (const Case &c : cases) {
    commit::TrainingCommitment m = good;
    c.change(m);
    const auto [status, message] = outcome([&] { task::check_commitment(t, m); });
    EXPECT_EQ(status, c.status) << message;
    EXPECT_NE(message.find(c.field), std::string::npos) << message << " // expected: " << c.field;
  }
}

TEST(Task, RunSeededScheduleIsEachRunsOwn) {
  task::Task t = test::test_task();
  t.schedule_rule = task::ScheduleRule::kRunSeeded;
  t.schedule_root = hash::Digest{};
  t.min_steps = 8;
  t.max_steps = 10;
  // Canonical bytes: field 7 holds an empty run_seeded (3a 02 12 00); both forms round-trip.
  const Bytes b = t.encode();
  const Bytes rule = {0x3a, 0x02, 0x12, 0x00};
  EXPECT_NE(std::search(b.begin(), b.end(), rule.begin(), rule.end()), b.end());
  EXPECT_EQ(task::Task::decode(b).id(), t.id());
  EXPECT_EQ(task::Task::from_json(t.to_json()).id(), t.id());
  EXPECT_EQ(t.to_json()["schedule"], nlohmann::json::parse(R"({"run_seeded": {}})"));
  {
    // Each run's own order makes runs differ without any random numbers.
    task::Task quiet = t;
    quiet.spec.dropout = 0;
    quiet.spec.seed_policy = spec::SeedPolicyKind::kNone;
    quiet.spec.seed = 0;
    EXPECT_NO_THROW(quiet.validate());
  }

  // Each (miner, step count) has its own order, and the commitment carries its root.
  const Bytes miner = {'m'}, thief = {'t'};
  const commit::TrainingCommitment mine = task::commitment_for(t, miner, 8);
  EXPECT_EQ(mine.schedule_root,
            commit::seeded_schedule_root(task::run_schedule_seed(t.id(), miner, 8), 1000, 4, 1, 8));
  EXPECT_EQ(status_of([&] { task::check_commitment(t, mine); }), Status::kOk);
  EXPECT_NE(task::commitment_for(t, thief, 8).schedule_root, mine.schedule_root);
  EXPECT_NE(task::commitment_for(t, miner, 9).schedule_root, mine.schedule_root);
  EXPECT_NE(task::run_schedule_seed(t.id(), miner, 8), task::run_schedule_seed(t.id(), miner, 9));
  // The length prefix keeps identity and step count apart.
  EXPECT_NE(task::run_schedule_seed(t.id(), Bytes{'m', 0}, 8), task::run_schedule_seed(t.id(), miner, 8));

  // Attack 5: the same commitment under another identity, or another step count.
  commit::TrainingCommitment copied = mine;
  copied.miner_identity = thief;
  auto [status, message] = outcome([&] { task::check_commitment(t, copied); });
  EXPECT_EQ(status, Status::kInvalidArgument);
  EXPECT_NE(message.find("schedule_root is " + mine.schedule_root.hex() + ", the run-seeded schedule of this miner"),
            std::string::npos)
      << message;
  commit::TrainingCommitment longer = mine;
  longer.declared_steps = 9;
  EXPECT_EQ(status_of([&] { task::check_commitment(t, longer); }), Status::kInvalidArgument);
  longer.declared_steps = 11;
  std::tie(status, message) = outcome([&] { task::check_commitment(t, longer); });
  EXPECT_EQ(status, Status::kOutOfRange) << message;
  EXPECT_NE(message.find("declared_steps 11 is outside 8..10"), std::string::npos) << message;

  // The rules of a run-seeded task.
  const struct {
    std::function<void(task::Task &)> change;
    const char *message;
  } rules[] = {
      {[](task::Task &x) { x.schedule_root = test::label_digest("a list"); }, "a run-seeded schedule has no listed root"},
      {[](task::Task &x) { x.max_steps = task::kMaxRunSeededDraws / 4; }, "index draws to recompute"},
      {[](task::Task &x) { x.dataset_size = task::kMaxRunSeededDraws; }, "index draws to recompute"},
  };
  for (const auto &r : rules) {
    task::Task x = t;
    r.change(x);
    std::tie(status, message) = outcome([&] { x.validate(); });
    EXPECT_EQ(status, Status::kInvalidArgument) << message;
    EXPECT_NE(message.find(r.message), std::string::npos) << message;
  }
  task::Task bound = t;  // exactly at the bound: accepted
  bound.dataset_size = 1000;
  bound.max_steps = (task::kMaxRunSeededDraws - 1000) / 4;
  EXPECT_EQ(status_of([&] { bound.validate(); }), Status::kOk);
  // A listed task still fixes the step count.
  task::Task listed = test::test_task();
  listed.max_steps = 9;
  EXPECT_EQ(status_of([&] { listed.validate(); }), Status::kInvalidArgument);
  // JSON: exactly one rule.
  nlohmann::json j = t.to_json();
  j["schedule"]["listed_root"] = test::label_digest("x").hex();
  EXPECT_EQ(status_of([&] { task::Task::from_json(j); }), Status::kInvalidArgument);
  j["schedule"] = nlohmann::json::object();
  EXPECT_EQ(status_of([&] { task::Task::from_json(j); }), Status::kInvalidArgument);
  j["schedule"] = nlohmann::json::parse(R"({"run_seeded": {"seed": 1}})");
  EXPECT_EQ(status_of([&] { task::Task::from_json(j); }), Status::kInvalidArgument);
}

TEST(Task, RunSeededUniformDrawsEachRunsOwnSamplesFromAnyDataset) {
  task::Task t = test::test_task();
  t.schedule_rule = task::ScheduleRule::kRunSeededUniform;
  t.schedule_root = hash::Digest{};
  t.dataset_size = uint64_t{1} << 40;  // the windows of a large token stream: no permutation could cover it
  t.min_steps = 8;
  t.max_steps = 10;
  // Field 7 holds an empty run_seeded_uniform (3a 02 1a 00); both forms round-trip.
  const Bytes b = t.encode();
  const Bytes rule = {0x3a, 0x02, 0x1a, 0x00};
  EXPECT_NE(std::search(b.begin(), b.end(), rule.begin(), rule.end()), b.end());
  EXPECT_EQ(task::Task::decode(b).id(), t.id());
  EXPECT_EQ(task::Task::from_json(t.to_json()).id(), t.id());
  EXPECT_EQ(t.to_json()["schedule"], nlohmann::json::parse(R"({"run_seeded_uniform": {}})"));
  // Another rule, so another task: the same fields as a run-seeded task give another id.
  task::Task permuted = t;
  permuted.schedule_rule = task::ScheduleRule::kRunSeeded;
  permuted.dataset_size = 1000;
  task::Task uniform_small = t;
  uniform_small.dataset_size = 1000;
  EXPECT_NE(permuted.id(), uniform_small.id());

  const Bytes miner = {'m'}, thief = {'t'};
  const commit::TrainingCommitment mine = task::commitment_for(t, miner, 8);
  EXPECT_EQ(mine.schedule_root,
            commit::uniform_schedule_root(task::run_schedule_seed(t.id(), miner, 8), t.dataset_size, 4, 1, 8));
  EXPECT_EQ(status_of([&] { task::check_commitment(t, mine); }), Status::kOk);
  // Attack 5 under this rule: a copied commitment under another identity.
  commit::TrainingCommitment copied = mine;
  copied.miner_identity = thief;
  auto [status, message] = outcome([&] { task::check_commitment(t, copied); });
  EXPECT_EQ(status, Status::kInvalidArgument);
  EXPECT_NE(message.find("the run_seeded_uniform schedule of this miner"), std::string::npos) << message;
  EXPECT_NE(task::commitment_for(t, miner, 9).schedule_root, mine.schedule_root);

  // Only the run's own draws bound it: no dataset term.
  task::Task bound = t;
  bound.max_steps = task::kMaxRunSeededDraws / 4;
  EXPECT_EQ(status_of([&] { bound.validate(); }), Status::kOk);
  bound.max_steps += 1;
  std::tie(status, message) = outcome([&] { bound.validate(); });
  EXPECT_EQ(status, Status::kInvalidArgument);
  EXPECT_NE(message.find("a run_seeded_uniform schedule of max_steps"), std::string::npos) << message;
  // The permuted rule names the uniform one when the dataset is what is too large.
  std::tie(status, message) = outcome([&] {
    task::Task big = t;
    big.schedule_rule = task::ScheduleRule::kRunSeeded;
    big.validate();
  });
  EXPECT_NE(message.find("run_seeded_uniform draws with replacement"), std::string::npos) << message;
  task::Task rooted = t;
  rooted.schedule_root = test::label_digest("a list");
  EXPECT_EQ(status_of([&] { rooted.validate(); }), Status::kInvalidArgument);
  nlohmann::json j = t.to_json();
  j["schedule"]["run_seeded"] = nlohmann::json::object();
  EXPECT_EQ(status_of([&] { task::Task::from_json(j); }), Status::kInvalidArgument);  // two rules
}

TEST(Schedule, UniformStreamDrawsEveryPositionOnItsOwn) {
  // Entries take the stream's positions; a window equals the walk from 0.
  std::vector<uint64_t> all(64), tail(9);
  commit::uniform_schedule_stream(5, 1000, 0, all.data(), all.size());
  commit::uniform_schedule_stream(5, 1000, 40, tail.data(), tail.size());
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), all.begin() + 40));
  const commit::ScheduleEntry e = commit::uniform_schedule_entry(5, 1000, 8, 2, 3);
  EXPECT_EQ(e.micro, (std::vector<std::vector<uint64_t>>{{all[16], all[17], all[18], all[19]},
                                                          {all[20], all[21], all[22], all[23]}}));
  hash::Accumulator acc;
  for (uint64_t t = 1; t <= 5; ++t) acc.push_leaf(hash::leaf_hash(commit::uniform_schedule_entry(5, 1000, 8, 2, t).encode()));
  EXPECT_EQ(commit::uniform_schedule_root(5, 1000, 8, 2, 5), acc.root());
  // Every index below the size, for sizes where most draws are rejected (just
  // above 2^63) and none are (a power of two); one sample: always 0.
  for (uint64_t n : {(uint64_t{1} << 63) + 5, uint64_t{1} << 40, uint64_t{3}, UINT64_MAX}) {
    std::vector<uint64_t> v(256);
    commit::uniform_schedule_stream(9, n, 0, v.data(), v.size());
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x < n; })) << n;
  }
  std::vector<uint64_t> one(4);
  commit::uniform_schedule_stream(9, 1, 0, one.data(), one.size());
  EXPECT_EQ(one, std::vector<uint64_t>(4, 0));
  // Uniform: 60000 draws over 6 values, each within 4 standard deviations of 10000.
  std::vector<uint64_t> many(60000);
  commit::uniform_schedule_stream(1, 6, 0, many.data(), many.size());
  for (uint64_t k = 0; k < 6; ++k) {
    const auto c = std::count(many.begin(), many.end(), k);
    EXPECT_NEAR(static_cast<double>(c), 10000.0, 4 * 91.3) << k;
  }
  // Other seeds, other draws; an empty dataset and a bad split are refused.
  std::vector<uint64_t> other(64);
  commit::uniform_schedule_stream(6, 1000, 0, other.data(), other.size());
  EXPECT_NE(other, all);
  EXPECT_EQ(status_of([&] { commit::uniform_schedule_stream(1, 0, 0, other.data(), 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { commit::uniform_schedule_entry(1, 10, 6, 4, 1); }), Status::kInvalidArgument);
  EXPECT_EQ(status_of([&] { commit::uniform_schedule_entry(1, 10, 4, 1, 0); }), Status::kInvalidArgument);
}
