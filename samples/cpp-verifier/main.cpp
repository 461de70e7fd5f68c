// cpp-verifier: a verifier's check of one challenged step, in C++17 over the
// C API (pot.h) alone.
//
// It plays both sides of a challenge on one machine:
//   miner     opens the recorder's checkpoint directory and serves the opening
//             of the step: the manifest (leaves, proofs, schedule entry,
//             samples) and the state before the step, re-derived from the
//             nearest checkpoint when it is not one (pot_checkpoints_*);
//   verifier  checks everything against the training commitment and the
//             posted log root, replays the step and compares: bit for bit, or
//             (--mode bucket, on another thread count) the norm bucket of the
//             update (pot_verify_step); then commits to what it replayed with
//             a salted witness commitment, to reveal later (pot_witness_*).
//
// Exit status: 0 the step verified, 1 a check failed (named) or the miner
// could not serve the step, 2 bad usage or unreadable input.
#include <pot.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

const char kUsage[] =
    "usage: cpp_verifier --checkpoints DIR --dataset DIR --spec SPEC.json --program MODEL.pt\n"
    "                    --root HEX --size N --step T [--commitment FILE] [--mode bitwise|bucket]\n"
    "                    [--threads N] [--identity HEX] [--challenge-id N] [--pre-state FILE]\n"
    "  --checkpoints  the recorder's checkpoint directory (the miner's side)\n"
    "  --dataset      the samples, %06d.safetensors by dataset index\n"
    "  --root, --size the log root posted on chain and its number of leaves\n"
    "  --commitment   training commitment bytes (default: DIR/commitment.bin)\n"
    "  --threads      replay on N intra-op threads (0 = the spec's; others need --mode bucket)\n"
    "  --identity     the verifier's identity in its witness commitment (hex)\n"
    "  --challenge-id the ledger's id of the challenge the witness statement answers (default 0)\n"
    "  --pre-state    serve this file as the state before the step instead (a cheating miner)\n";

// An error that ends the program with an exit status.
struct Exit : std::runtime_error {
  Exit(int c, const std::string &m) : std::runtime_error(m), code(c) {}
  int code;
};

// Owned C handles: the C API's free functions all accept NULL.
template <typename T, void (*Free)(T *)>
struct Deleter {
  void operator()(T *p) const { Free(p); }
};
using Spec = std::unique_ptr<pot_spec, Deleter<pot_spec, pot_spec_free>>;
using Commitment = std::unique_ptr<pot_commitment, Deleter<pot_commitment, pot_commitment_free>>;
using Checkpoints = std::unique_ptr<pot_checkpoints, Deleter<pot_checkpoints, pot_checkpoints_free>>;

// Throws Exit(code) with the error's message when a call failed. Takes
// &err, read only after the call has run (argument order is unspecified).
void check(pot_status status, pot_error **err, const std::string &what, int code = 2) {
  if (status == POT_OK) return;
  const std::string msg = what + ": " + pot_error_message(*err) + " (" + pot_status_name(status) + ")";
  pot_error_free(*err);
  *err = nullptr;
  throw Exit(code, msg);
}

// A pot_bytes result as a std::string or byte vector, freeing it.
std::string take_string(pot_bytes &b) {
  std::string s(reinterpret_cast<const char *>(b.data), b.len);
  pot_bytes_free(&b);
  return s;
}
std::vector<uint8_t> take_bytes(pot_bytes &b) {
  std::vector<uint8_t> v(b.data, b.data + b.len);
  pot_bytes_free(&b);
  return v;
}

std::vector<uint8_t> read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Exit(2, "cannot read '" + path + "'");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string hex(const uint8_t *p, size_t n) {
  static const char d[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {d[p[i] >> 4], d[p[i] & 15]};
  return s;
}
std::string hex(const pot_digest &d) { return hex(d.bytes, sizeof d.bytes); }

std::vector<uint8_t> unhex(const std::string &s, const char *what) {
  std::vector<uint8_t> out;
  if (s.empty() || s.size() % 2 || s.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw Exit(2, std::string(what) + ": not hex: '" + s + "'");
  for (size_t i = 0; i < s.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return out;
}

struct Args {
  std::string checkpoints, dataset, spec, program, root, commitment, mode = "bitwise", pre_state;
  std::string identity = "6370702d7665726966696572";  // "cpp-verifier"
  uint64_t size = 0, step = 0, challenge_id = 0;
  uint32_t threads = 0;
};

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "-h" || k == "--help") throw Exit(0, "");
    if (i + 1 >= argc) throw Exit(2, k + " needs a value");
    const std::string v = argv[i + 1];
    try {
      if (k == "--checkpoints") a.checkpoints = v;
      else if (k == "--dataset") a.dataset = v;
      else if (k == "--spec") a.spec = v;
      else if (k == "--program") a.program = v;
      else if (k == "--root") a.root = v;
      else if (k == "--size") a.size = std::stoull(v);
      else if (k == "--step") a.step = std::stoull(v);
      else if (k == "--commitment") a.commitment = v;
      else if (k == "--mode") a.mode = v;
      else if (k == "--threads") a.threads = static_cast<uint32_t>(std::stoul(v));
      else if (k == "--identity") a.identity = v;
      else if (k == "--challenge-id") a.challenge_id = std::stoull(v);
      else if (k == "--pre-state") a.pre_state = v;
      else throw Exit(2, "unknown option " + k);
    } catch (const std::logic_error &) {  // stoull and friends
      throw Exit(2, k + ": not a number: '" + v + "'");
    }
  }
  if (a.checkpoints.empty() || a.dataset.empty() || a.spec.empty() || a.program.empty() || a.root.empty() ||
      a.size == 0 || a.step == 0)
    throw Exit(2, "--checkpoints, --dataset, --spec, --program, --root, --size and --step are required");
  if (a.mode != "bitwise" && a.mode != "bucket") throw Exit(2, "--mode is bitwise or bucket");
  if (a.commitment.empty()) a.commitment = a.checkpoints + "/commitment.bin";
  return a;
}

int run(const Args &a) {
  pot_error *err = nullptr;
  const bool bucket = a.mode == "bucket";

  // What the verifier knows from the chain: the commitment, the spec it
  // names, the posted root.
  pot_spec *s = nullptr;
  const auto spec_text = read_file(a.spec);
  check(pot_spec_from_json(&s, std::string(spec_text.begin(), spec_text.end()).c_str(), &err), &err, a.spec);
  const Spec spec(s);
  pot_commitment *c = nullptr;
  const auto commitment_bytes = read_file(a.commitment);
  check(pot_commitment_decode(&c, commitment_bytes.data(), commitment_bytes.size(), &err), &err, a.commitment);
  const Commitment commitment(c);
  pot_digest run_id, root;
  check(pot_commitment_run_id(&run_id, commitment.get(), &err), &err, "run id");
  check(pot_digest_from_hex(&root, a.root.c_str(), &err), &err, "--root");
  const std::vector<uint8_t> identity = unhex(a.identity, "--identity");
  std::printf("pot %s cpp-verifier: step %llu of run %.16s..., posted log of %llu leaves\n", pot_version_string(),
              static_cast<unsigned long long>(a.step), hex(run_id).c_str(), static_cast<unsigned long long>(a.size));

  // The miner serves the opening from its checkpoint directory.
  pot_checkpoints *ck = nullptr;
  check(pot_checkpoints_open(&ck, a.checkpoints.c_str(), &err), &err, a.checkpoints);
  const Checkpoints checkpoints(ck);
  pot_bytes b{nullptr, 0};
  uint64_t replayed = 0;
  const char *serving = "miner could not serve the step";
  check(pot_checkpoints_state_path(&b, &replayed, ck, a.step - 1, a.dataset.c_str(), &err), &err, serving, 1);
  std::string pre = take_string(b);
  check(pot_checkpoints_opening(&b, ck, a.step, a.size, a.dataset.c_str(), bucket ? 1 : 0, &err), &err, serving, 1);
  const std::vector<uint8_t> manifest = take_bytes(b);
  std::string post;
  if (bucket) {
    check(pot_checkpoints_state_path(&b, nullptr, ck, a.step, a.dataset.c_str(), &err), &err, serving, 1);
    post = take_string(b);
  }
  std::printf("miner:    opening served (%zu bytes)\n          S_%llu %s (%s)\n", manifest.size(),
              static_cast<unsigned long long>(a.step - 1), pre.c_str(),
              replayed ? ("re-derived, " + std::to_string(replayed) + " step(s) replayed").c_str() : "on disk");
  if (bucket) std::printf("          S_%llu %s\n", static_cast<unsigned long long>(a.step), post.c_str());
  if (!a.pre_state.empty()) {
    pre = a.pre_state;
    std::printf("miner:    ...but serves %s as S_%llu\n", pre.c_str(), static_cast<unsigned long long>(a.step - 1));
  }

  // The verifier checks the opening, replays the step and compares.
  pot_verify_result r = POT_VERIFY_RESULT_INIT;
  const pot_status st = pot_verify_step(&r, commitment.get(), spec.get(), a.program.c_str(), a.step, a.size, &root,
                                        manifest.data(), manifest.size(), pre.c_str(), bucket ? post.c_str() : nullptr,
                                        bucket ? POT_VERIFY_NORM_BUCKET : POT_VERIFY_BITWISE, a.threads, &err);
  if (st != POT_OK && r.check == POT_CHECK_OK) check(st, &err, "verify");  // misuse: no check ran
  const unsigned threads = a.threads ? a.threads : pot_spec_intra_op_threads(spec.get());
  if (r.replayed) {
    std::printf("  replayed state  %s\n", hex(r.replayed_state_digest).c_str());
    std::printf("  committed state %s\n", hex(r.committed_state_digest).c_str());
    std::printf("  loss            %.9g (committed %.9g)\n", r.loss, r.committed_loss);
    std::printf("  update norm     %.9g, norm bucket %lld (committed %.9g, bucket %lld)\n", r.update_norm,
                static_cast<long long>(r.norm_bucket), r.committed_update_norm,
                static_cast<long long>(r.committed_norm_bucket));
    // Check 27: the step's S_t needs its gradient (a zero gradient gives another state).
    std::printf("  gradient        changed %llu of %llu parameter and %llu of %llu optimizer-state elements\n",
                static_cast<unsigned long long>(r.gradient.gradient_elements),
                static_cast<unsigned long long>(r.gradient.param_elements),
                static_cast<unsigned long long>(r.gradient.optim_gradient_elements),
                static_cast<unsigned long long>(r.gradient.optim_elements));
  }

  // The witness commits to its statement before anyone reveals
  // (docs/PROTOCOL.md section 19): the challenge, the environment pot's
  // replay ran in, and what it found: the replayed value, or the check
  // that failed.
  {
    pot_error *werr = nullptr;
    pot_bytes text{};
    check(pot_witness_statement(&text, &r, spec.get(), &run_id, a.step, a.challenge_id,
                                bucket ? POT_VERIFY_NORM_BUCKET : POT_VERIFY_BITWISE, a.threads, &werr),
          &werr, "witness statement");
    const std::string statement(reinterpret_cast<const char *>(text.data), text.len);
    pot_bytes_free(&text);
    uint8_t salt[POT_WITNESS_SALT_SIZE];
    pot_digest wc;
    check(pot_witness_salt(salt, &werr), &werr, "salt");
    check(pot_witness_commitment(&wc, statement.c_str(), salt, sizeof salt, identity.data(), identity.size(), &werr),
          &werr, "witness commitment");
    std::printf("witness:  %s\n          commitment %s\n          salt %s, identity %s (revealed later)\n",
                statement.c_str(), hex(wc).c_str(), hex(salt, sizeof salt).c_str(), a.identity.c_str());
  }
  if (st != POT_OK) {
    std::printf("verifier: step %llu REJECTED at %s\n  %s\n", static_cast<unsigned long long>(a.step),
                pot_opening_check_name(r.check), pot_error_message(err));
    pot_error_free(err);
    return 1;
  }
  std::printf("verifier: step %llu OK (%s, %u thread%s)\n", static_cast<unsigned long long>(a.step),
              bucket ? "norm bucket" : "bitwise", threads, threads == 1 ? "" : "s");
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);  // lines in order with stderr's
  Args args;
  try {
    args = parse(argc, argv);
  } catch (const Exit &e) {
    if (e.code == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "cpp-verifier: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    return run(args);
  } catch (const Exit &e) {
    std::fprintf(stderr, "cpp-verifier: %s\n", e.what());
    return e.code;
  }
}
