// pot merkle root|build|prove|consistency|verify-inclusion|verify-consistency.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli_util.h"

namespace pot_cli {

namespace {

using Tree = std::unique_ptr<pot_tree, decltype(&pot_tree_free)>;

struct TreeOpts {
  LeafSource leaves;
  std::string tree_file;
  bool json = false;
};

void add_tree_options(CLI::App *cmd, TreeOpts &o) {
  cmd->add_option("LEAVES", o.leaves.inputs,
                  "file of hex leaf lines ('-' = stdin), or leaf files with --raw");
  cmd->add_flag("--raw", o.leaves.raw, "each LEAVES argument is a file holding one leaf");
  cmd->add_flag("--hashed", o.leaves.hashed, "hex lines are leaf hashes, not leaf data");
  cmd->add_option("--tree", o.tree_file, "use a stored tree file instead of LEAVES");
  cmd->add_flag("--json", o.json, "print JSON");
}

// The tree the options name: a stored tree file, or LEAVES in memory.
Tree load_tree(const TreeOpts &o) {
  pot_error *err = nullptr;
  pot_tree *t = nullptr;
  if (!o.tree_file.empty()) {
    if (!o.leaves.inputs.empty()) throw CliError(kExitUsage, "give LEAVES or --tree, not both");
    check(pot_tree_open(&t, o.tree_file.c_str(), &err), &err, o.tree_file.c_str());
    return Tree(t, pot_tree_free);
  }
  if (o.leaves.inputs.empty()) throw CliError(kExitUsage, "no leaves: give LEAVES or --tree");
  check(pot_tree_open(&t, nullptr, &err), &err, "tree");
  Tree tree(t, pot_tree_free);
  for (const pot_digest &d : leaf_hashes(o.leaves)) check(pot_tree_append_hash(nullptr, t, &d, &err), &err, "append");
  return tree;
}

std::vector<std::string> split_proof(const pot_bytes &p) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 32 <= p.len; i += 32) out.push_back(hex(p.data + i, 32));
  return out;
}

std::vector<uint8_t> proof_arg(const std::string &path) {
  std::vector<uint8_t> out;
  size_t n = 0;
  for (const std::string &l : read_lines(path, false)) {
    const pot_digest d = digest_arg(l, "proof line " + std::to_string(++n));
    out.insert(out.end(), d.bytes, d.bytes + 32);
  }
  return out;
}

pot_digest root_at(const Tree &t, uint64_t size) {
  pot_error *err = nullptr;
  pot_digest d;
  check(pot_tree_root(&d, t.get(), size, &err), &err, "root");
  return d;
}

void add_merkle_root(CLI::App *m) {
  auto rt = std::make_shared<TreeOpts>();
  CLI::App *c_root = m->add_subcommand("root", "Root of a tree of leaves");
  add_tree_options(c_root, *rt);
  c_root->callback([rt] {
    const Tree t = load_tree(*rt);
    const uint64_t n = pot_tree_size(t.get());
    const pot_digest d = root_at(t, n);
    emit(rt->json, {{"size", n}, {"root", hex(d)}}, {hex(d)});
  });
}

void add_merkle_build(CLI::App *m) {
  auto build = std::make_shared<TreeOpts>();
  CLI::App *c_build = m->add_subcommand("build", "Append leaves to a stored tree file (created when missing)");
  add_tree_options(c_build, *build);
  c_build->get_option("--tree")->required();
  c_build->callback([build] {
    pot_error *err = nullptr;
    pot_tree *t = nullptr;
    check(pot_tree_open(&t, build->tree_file.c_str(), &err), &err, build->tree_file.c_str());
    Tree tree(t, pot_tree_free);
    for (const pot_digest &d : leaf_hashes(build->leaves)) check(pot_tree_append_hash(nullptr, t, &d, &err), &err, "append");
    check(pot_tree_flush(t, &err), &err, "flush");
    const uint64_t n = pot_tree_size(t);
    const pot_digest d = root_at(tree, n);
    emit(build->json, {{"size", n}, {"root", hex(d)}}, {hex(d)});
  });
}

void add_merkle_prove(CLI::App *m) {
  struct Prove : TreeOpts {
    uint64_t index = 0, size = 0;
  };
  auto prove = std::make_shared<Prove>();
  CLI::App *c_prove = m->add_subcommand("prove", "Inclusion proof of one leaf");
  add_tree_options(c_prove, *prove);
  c_prove->add_option("--index", prove->index, "leaf index (from 0)")->required();
  c_prove->add_option("--size", prove->size, "tree size the proof is for (default: all leaves)");
  c_prove->callback([prove] {
    const Tree t = load_tree(*prove);
    const uint64_t size = prove->size ? prove->size : pot_tree_size(t.get());
    pot_error *err = nullptr;
    pot_bytes p{};
    check(pot_tree_inclusion_proof(&p, t.get(), prove->index, size, &err), &err, "prove");
    const auto hashes = split_proof(p);
    pot_bytes_free(&p);
    pot_digest leaf;
    check(pot_tree_leaf_hash(&leaf, t.get(), prove->index, &err), &err, "leaf");
    emit(prove->json,
         {{"index", prove->index}, {"size", size}, {"leaf_hash", hex(leaf)},
          {"root", hex(root_at(t, size))}, {"proof", hashes}},
         hashes);
  });
}

void add_merkle_consistency(CLI::App *m) {
  struct Consistency : TreeOpts {
    uint64_t old_size = 0, new_size = 0;
  };
  auto cons = std::make_shared<Consistency>();
  CLI::App *c_cons = m->add_subcommand("consistency", "Consistency proof between two sizes");
  add_tree_options(c_cons, *cons);
  c_cons->add_option("--old", cons->old_size, "older tree size")->required();
  c_cons->add_option("--new", cons->new_size, "newer tree size (default: all leaves)");
  c_cons->callback([cons] {
    const Tree t = load_tree(*cons);
    const uint64_t n = cons->new_size ? cons->new_size : pot_tree_size(t.get());
    pot_error *err = nullptr;
    pot_bytes p{};
    check(pot_tree_consistency_proof(&p, t.get(), cons->old_size, n, &err), &err, "consistency");
    const auto hashes = split_proof(p);
    pot_bytes_free(&p);
    emit(cons->json,
         {{"old_size", cons->old_size}, {"new_size", n}, {"old_root", hex(root_at(t, cons->old_size))},
          {"new_root", hex(root_at(t, n))}, {"proof", hashes}},
         hashes);
  });
}

void add_merkle_verify_inclusion(CLI::App *m) {
  struct VerifyInclusion {
    uint64_t index = 0, size = 0;
    std::string leaf_hash, leaf_data, root, proof = "-";
    bool json = false;
  };
  auto vi = std::make_shared<VerifyInclusion>();
  CLI::App *c_vi = m->add_subcommand("verify-inclusion", "Verify an inclusion proof (RFC 9162 2.1.3.2)");
  c_vi->add_option("--index", vi->index, "leaf index")->required();
  c_vi->add_option("--size", vi->size, "tree size")->required();
  auto *lh = c_vi->add_option("--leaf-hash", vi->leaf_hash, "leaf hash (hex)");
  auto *ld = c_vi->add_option("--leaf", vi->leaf_data, "leaf data (hex), hashed as an RFC 6962 leaf");
  lh->excludes(ld);
  c_vi->add_option("--root", vi->root, "tree root (hex)")->required();
  c_vi->add_option("--proof", vi->proof, "file of proof hashes, one hex per line ('-' = stdin)")->capture_default_str();
  c_vi->add_flag("--json", vi->json, "print JSON");
  c_vi->callback([vi] {
    pot_error *err = nullptr;
    pot_digest leaf;
    if (!vi->leaf_hash.empty()) {
      leaf = digest_arg(vi->leaf_hash, "--leaf-hash");
    } else {
      const auto data = unhex(vi->leaf_data, "--leaf");
      check(pot_merkle_leaf_hash(&leaf, data.data(), data.size(), &err), &err, "leaf");
    }
    const pot_digest root = digest_arg(vi->root, "--root");
    const auto proof = proof_arg(vi->proof);
    check(pot_merkle_verify_inclusion(vi->index, vi->size, &leaf, proof.data(), proof.size(), &root, &err), &err,
          "inclusion proof rejected");
    emit(vi->json, {{"valid", true}}, {"OK"});
  });
}

void add_merkle_verify_consistency(CLI::App *m) {
  struct VerifyConsistency {
    uint64_t old_size = 0, new_size = 0;
    std::string old_root, new_root, proof = "-";
    bool json = false;
  };
  auto vc = std::make_shared<VerifyConsistency>();
  CLI::App *c_vc = m->add_subcommand("verify-consistency", "Verify a consistency proof (RFC 9162 2.1.4.2)");
  c_vc->add_option("--old", vc->old_size, "older tree size")->required();
  c_vc->add_option("--new", vc->new_size, "newer tree size")->required();
  c_vc->add_option("--old-root", vc->old_root, "older root (hex)")->required();
  c_vc->add_option("--new-root", vc->new_root, "newer root (hex)")->required();
  c_vc->add_option("--proof", vc->proof, "file of proof hashes, one hex per line ('-' = stdin)")->capture_default_str();
  c_vc->add_flag("--json", vc->json, "print JSON");
  c_vc->callback([vc] {
    pot_error *err = nullptr;
    const pot_digest r1 = digest_arg(vc->old_root, "--old-root"), r2 = digest_arg(vc->new_root, "--new-root");
    const auto proof = proof_arg(vc->proof);
    check(pot_merkle_verify_consistency(vc->old_size, vc->new_size, &r1, &r2, proof.data(), proof.size(), &err),
          &err, "consistency proof rejected");
    emit(vc->json, {{"valid", true}}, {"OK"});
  });
}

}  // namespace

void add_merkle_commands(CLI::App &app) {
  CLI::App *m = app.add_subcommand("merkle", "RFC 6962 trees: roots, proofs, verification");
  m->require_subcommand(1);
  add_merkle_root(m);
  add_merkle_build(m);
  add_merkle_prove(m);
  add_merkle_consistency(m);
  add_merkle_verify_inclusion(m);
  add_merkle_verify_consistency(m);
}

}  // namespace pot_cli
