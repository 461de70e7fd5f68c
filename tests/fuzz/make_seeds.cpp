// Writes the seed corpora of the libFuzzer targets from the shared test
// vectors (tests/vectors/*.json): one directory per target under OUT_DIR, one
// file per seed, each in the exact input layout of its target. Values the
// vectors do not hold as bytes (manifests, ledger states, safetensors files)
// are built with the library from the vectors' values.
//
// Usage: fuzz_make_seeds VECTORS_DIR OUT_DIR
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "commit/opening.h"
#include "spec/spec.h"
#include "common/bytes.h"
#include "common/error.h"
#include "hash/sha256.h"
#include "game/ledger.h"
#include "dispute/op_referee.h"
#include "stream_fixture.h"

namespace fs = std::filesystem;
using nlohmann::json;
using pot::Bytes;

namespace {

fs::path g_out;
size_t g_count = 0;

json load(const fs::path &dir, const char *name) {
  std::ifstream in(dir / name);
  if (!in) throw std::runtime_error("cannot open " + (dir / name).string());
  return json::parse(in);
}

void seed(const std::string &target, const std::string &name, const Bytes &bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + (dir / name).string());
  ++g_count;
}

void seed(const std::string &target, const std::string &name, const std::string &text) {
  seed(target, name, Bytes(text.begin(), text.end()));
}

Bytes hex(const json &j) { return pot::from_hex(j.get<std::string>()); }

pot::hash::Digest digest(const json &j) {
  const Bytes b = hex(j);
  pot::hash::Digest d;
  if (b.size() != d.bytes.size()) throw std::runtime_error("not a 32-byte digest: " + j.dump());
  std::copy(b.begin(), b.end(), d.bytes.begin());
  return d;
}

Bytes proof(const json &hashes) {
  Bytes out;
  for (const auto &h : hashes) pot::put_bytes(out, hex(h));
  return out;
}

// stream(seed, n) of tests/vectors/README.md.
Bytes stream(const std::string &s, size_t n) {
  Bytes out;
  for (uint64_t i = 0; out.size() < n; ++i) {
    Bytes in(s.begin(), s.end());
    pot::put_u64le(in, i);
    const auto d = pot::hash::sha256(in);
    out.insert(out.end(), d.bytes.begin(), d.bytes.end());
  }
  out.resize(n);
  return out;
}

// A safetensors file holding the given hash.json tensors.
Bytes safetensors(const std::vector<json> &tensors) {
  json header = json::object();
  Bytes data;
  for (const auto &t : tensors) {
    const size_t begin = data.size();
    const Bytes b = stream(t["seed"].get<std::string>(), t["nbytes"].get<size_t>());
    data.insert(data.end(), b.begin(), b.end());
    header[t["name"].get<std::string>()] = {
        {"dtype", t["dtype"]}, {"shape", t["shape"]}, {"data_offsets", {begin, data.size()}}};
  }
  const std::string h = header.dump();
  Bytes out;
  pot::put_u64le(out, h.size());
  pot::put_str(out, h);
  pot::put_bytes(out, data);
  return out;
}

void safetensors_seeds(const json &hash) {
  std::vector<json> all;
  size_t i = 0;
  for (const auto &t : hash["tensor_digests"]) {
    // Multi-chunk tensors (up to megabytes) would slow every execution that
    // mutates them; the chunking code is covered by the unit tests.
    if (t["nbytes"].get<size_t>() > 4096) continue;
    seed("fuzz_safetensors", "tensor_" + std::to_string(i++), safetensors({t}));
    all.push_back(t);
  }
  // Names are unique in the vectors except where a case repeats one on purpose.
  std::vector<json> distinct;
  std::set<std::string> names;
  for (const auto &t : all)
    if (names.insert(t["name"].get<std::string>()).second) distinct.push_back(t);
  seed("fuzz_safetensors", "all_tensors", safetensors(distinct));
  seed("fuzz_safetensors", "empty_state", safetensors({}));
}

void spec_seeds(const json &protocol) {
  size_t i = 0;
  for (const auto &s : protocol["specs"]) {
    const Bytes b = hex(s["canonical"]);
    seed("fuzz_spec", "spec_" + std::to_string(i), b);
    seed("fuzz_spec_json", "spec_" + std::to_string(i), pot::spec::ExecutionSpec::decode(b).to_json().dump(1));
    ++i;
  }
}

void commitment_seeds(const json &protocol, const json &transcript) {
  size_t i = 0;
  for (const auto &c : protocol["commitments"]) seed("fuzz_commitment", "vector_" + std::to_string(i++), hex(c["canonical"]));
  for (const auto &c : transcript["calls"])
    if (c.contains("commitment") && c["call"] == "start_training_commitment")
      seed("fuzz_commitment", "ledger_" + std::to_string(i++), hex(c["commitment"]));
  for (const auto &t : protocol["tasks"]) seed("fuzz_task", "vector_" + std::to_string(i++), hex(t["canonical"]));
  for (const auto &c : transcript["calls"])
    if (c.contains("task")) seed("fuzz_task", "ledger_" + std::to_string(i++), hex(c["task"]));
}

// The fuzz_proofs layout: kind (bit 0: 1 inclusion, 0 consistency), u64 a,
// u64 b (host order, as the target reads them), then the proof's hashes.
void proof_seeds(const json &rfc) {
  auto put = [](const std::string &name, uint8_t kind, uint64_t a, uint64_t b, const Bytes &p) {
    Bytes in{kind};
    in.resize(17);
    std::memcpy(in.data() + 1, &a, 8);
    std::memcpy(in.data() + 9, &b, 8);
    pot::put_bytes(in, p);
    seed("fuzz_proofs", name, in);
  };
  size_t i = 0;
  for (const auto &p : rfc["inclusion_proofs"])
    put("inclusion_" + std::to_string(i++), 1, p["leaf_index"].get<uint64_t>(), p["tree_size"].get<uint64_t>(),
        proof(p["proof"]));
  i = 0;
  for (const auto &p : rfc["consistency_proofs"])
    put("consistency_" + std::to_string(i++), 0, p["size1"].get<uint64_t>(), p["size2"].get<uint64_t>(),
        proof(p["proof"]));
}

// Operator nodes from the vectors, and openings of them (as a party whose
// trace ends, and one with the node and empty proofs).
void op_seeds(const json &protocol) {
  size_t i = 0;
  for (const auto &n : protocol["op_nodes"]) {
    const Bytes node = hex(n["leaf_data"]);
    seed("fuzz_op_node", "node_" + std::to_string(i), node);
    if (i == 0) {
      // JSON that parses only as far as a number out of double's range (a
      // finding of the harness itself: it let the parser's out_of_range out).
      seed("fuzz_op_node", "json_number_overflow", std::string(" \t\t33333333e33333"));
      seed("fuzz_op_node", "json_node_number_overflow", std::string("{\"name\": 1e400}"));
    }
    pot::dispute::NodeOpening o;
    seed("fuzz_op_opening", "end_" + std::to_string(i), o.encode());
    o.node = node;
    o.inclusion.resize(i % 3);
    o.tensors.push_back(Bytes(16, static_cast<uint8_t>(i)));
    o.producers[i] = pot::dispute::ProducerOpening{node, {}};
    seed("fuzz_op_opening", "node_" + std::to_string(i++), o.encode());
  }
}

void leaf_and_log_seeds(const json &protocol, const json &hash) {
  size_t i = 0;
  for (const auto &l : protocol["step_leaves"]) seed("fuzz_step_leaf", "leaf_" + std::to_string(i++), hex(l["leaf"]));
  i = 0;
  for (const auto &l : hash["log_states"]) seed("fuzz_log", "log_" + std::to_string(i++), hex(l["saved"]));
  i = 0;
  for (const auto &t : hash["state_stats"]) seed("fuzz_state_stats", "table_" + std::to_string(i++), hex(t["table"]));
  for (const auto &f : hash["state_flags"]) seed("fuzz_state_stats", "table_" + std::to_string(i++), hex(f["after"]));
}

void schedule_seeds(const json &protocol) {
  size_t i = 0;
  for (const auto &e : protocol["schedule_entries"]) seed("fuzz_schedule_entry", "entry_" + std::to_string(i++), hex(e["entry"]));
  for (const auto &s : protocol["seeded_schedules"])
    for (const auto &e : s["entries"]) seed("fuzz_schedule_entry", "entry_" + std::to_string(i++), hex(e));
}

// The fuzz_witness layout: commitment (32 bytes), salt length, salt,
// identity length, identity, then the statement's JSON text.
void witness_seeds(const json &protocol) {
  size_t i = 0;
  for (const auto &w : protocol["witness_commitments"]) {
    Bytes in;
    pot::put_bytes(in, hex(w["commitment"]));
    const Bytes salt = hex(w["salt"]), identity = hex(w["identity"]);
    in.push_back(static_cast<uint8_t>(salt.size()));
    pot::put_bytes(in, salt);
    in.push_back(static_cast<uint8_t>(identity.size()));
    pot::put_bytes(in, identity);
    const std::string text = w["statement"].dump();
    in.insert(in.end(), text.begin(), text.end());
    seed("fuzz_witness", "reveal_" + std::to_string(i++), in);
  }
}

// The transcript's calls, one JSON object per line (fuzz_ledger_calls), and
// the saved state after every accepted call (fuzz_ledger_state).
void ledger_seeds(const json &transcript) {
  pot::game::Ledger ledger(pot::game::LedgerConfig::from_json(transcript["config"]));
  std::string lines;
  size_t i = 0;
  seed("fuzz_ledger_state", "state_0", ledger.save());
  for (json call : transcript["calls"]) {
    call.erase("expect");
    call.erase("result");
    lines += call.dump() + "\n";
    // The operator phase's real openings and post-state nodes.
    if (call["call"] == "open_node") seed("fuzz_op_opening", "transcript_" + std::to_string(i), hex(call["opening"]));
    if (call["call"] == "commit_trace") seed("fuzz_op_node", "transcript_" + std::to_string(i), hex(call["post_node"]));
    try {
      const json result = ledger.apply(call);
      seed("fuzz_ledger_state", "state_" + std::to_string(++i), ledger.save());
      // finalize_challenge's record (challenge_info has the key too, null
      // until final).
      if (result.contains("outcome") && result["outcome"].is_string())
        seed("fuzz_outcome", "record_" + std::to_string(i), hex(result["outcome"]));
      // An ended dispute's record.
      if (result.contains("record") && result["record"].is_string())
        seed("fuzz_outcome", "dispute_record_" + std::to_string(i), hex(result["record"]));
    } catch (const pot::Error &) {
    }
    seed("fuzz_ledger_calls", "transcript_" + std::to_string(i) + "_" + std::to_string(lines.size()), lines);
  }
}

// Manifests built from the protocol vectors' leaves, schedule entry and
// RFC 6962 proofs: the step-1 form (no pre-leaf) and a later step with two
// samples and state references.
void manifest_seeds(const json &protocol, const json &rfc, const json &hash) {
  const json &leaves = protocol["step_leaves"];
  const Bytes path = proof(rfc["inclusion_proofs"][3]["proof"]);
  pot::commit::OpeningManifest m;
  m.run_id = digest(protocol["commitments"][0]["run_id"]);
  m.step = 1;
  m.log_size = 8;
  m.pre_state_digest = digest(hash["state_digests"][1]["digest"]);
  m.post_leaf = hex(leaves[0]["leaf"]);
  m.post_leaf_proof = path;
  m.schedule_entry = hex(protocol["schedule_entries"][0]["entry"]);
  m.schedule_proof = path;
  seed("fuzz_manifest", "step_1", m.encode());
  m.step = leaves[1]["step"].get<uint64_t>();
  m.pre_leaf = hex(leaves[0]["leaf"]);
  m.pre_leaf_proof = path;
  m.post_leaf = hex(leaves[1]["leaf"]);
  for (uint64_t index : {2u, 3u}) {
    pot::commit::SampleOpening s;
    s.index = index;
    s.payload = safetensors({hash["tensor_digests"][0]});
    s.proof = path;
    m.samples.push_back(s);
  }
  m.pre_state_ref = "checkpoints/000000000001";
  m.post_state_ref = "derived/000000000002";
  seed("fuzz_manifest", "later_step", m.encode());
  m.pre_state_ref = "checkpoints/000000000002.safetensors";
  seed("fuzz_manifest", "state_ref", m.encode());
  // A run on a token stream: the descriptor, and windows as their proofs.
  const auto d = pot::fuzz::stream_dataset();
  const auto shards = pot::fuzz::stream_shards();
  m.stream = d.encode();
  m.samples.clear();
  for (uint64_t index : {uint64_t{2}, uint64_t{2968}}) {
    pot::commit::SampleOpening s;
    s.index = index;
    s.window = pot::data::prove_window(d, index, shards[d.locate(index).first]).encode();
    m.samples.push_back(s);
  }
  seed("fuzz_manifest", "stream", m.encode());
  // The run record (fields 16-18): the vectors' leaves and tables.
  for (const auto &l : leaves) {
    const Bytes b = hex(l["leaf"]);
    m.run_leaves.insert(m.run_leaves.end(), b.begin(), b.end());
  }
  for (const auto &t : hash["state_stats"]) m.run_tables.push_back(hex(t["table"]));
  m.flagged_steps = {1, 3};
  seed("fuzz_manifest", "run_record", m.encode());
}

}  // namespace

// Not from the vectors: the dataset of stream_fixture.h, its descriptor
// and proofs of windows at its edges (first and last window of each shard,
// one across a chunk boundary), each prefixed with its mode byte.
void stream_seeds() {
  const auto d = pot::fuzz::stream_dataset();
  const auto shards = pot::fuzz::stream_shards();
  Bytes desc{0};
  const Bytes enc = d.encode();
  desc.insert(desc.end(), enc.begin(), enc.end());
  seed("fuzz_stream", "descriptor", desc);
  for (uint64_t i : {uint64_t{0}, uint64_t{2030}, uint64_t{2967}, uint64_t{2968}, d.size() - 1}) {
    const auto [s, o] = d.locate(i);
    Bytes p{1};
    const Bytes proof = pot::data::prove_window(d, i, shards[s]).encode();
    p.insert(p.end(), proof.begin(), proof.end());
    seed("fuzz_stream", "window_" + std::to_string(i), p);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: fuzz_make_seeds VECTORS_DIR OUT_DIR\n";
    return 2;
  }
  try {
    const fs::path vectors = argv[1];
    g_out = argv[2];
    const json hash = load(vectors, "hash.json"), protocol = load(vectors, "protocol.json"),
               rfc = load(vectors, "rfc6962.json"), transcript = load(vectors, "ledger_transcript.json");
    safetensors_seeds(hash);
    spec_seeds(protocol);
    commitment_seeds(protocol, transcript);
    proof_seeds(rfc);
    schedule_seeds(protocol);
    leaf_and_log_seeds(protocol, hash);
    witness_seeds(protocol);
    ledger_seeds(transcript);
    manifest_seeds(protocol, rfc, hash);
    op_seeds(protocol);
    stream_seeds();
  } catch (const std::exception &e) {
    std::cerr << "fuzz_make_seeds: " << e.what() << "\n";
    return 1;
  }
  std::cout << "fuzz_make_seeds: " << g_count << " seeds in " << g_out.string() << "\n";
  return 0;
}
