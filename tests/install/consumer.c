/* Consumer of an installed pot: digests a tensor and checks a proof. With
 * an argument, also checks the replay module (loaded on first use): "replay"
 * expects it to load, "no-replay" expects a clear POT_E_UNSUPPORTED naming
 * it (a libpot whose module is missing), "no-torch" one naming the build
 * option (a libpot built with POT_WITH_TORCH=OFF). */
#include <pot.h>
#include <stdio.h>
#include <string.h>

static int check_replay(const char *expect) {
  const char *hw = NULL;
  pot_error *err = NULL;
  pot_status s;
  if (strcmp(expect, "replay") == 0) {
    if (!pot_replay_available()) return 20;
    if (pot_replay_hardware_class(&hw, NULL) != POT_OK) return 21;
    printf("replay module loaded: hardware class %s\n", hw);
    return 0;
  }
  if (strcmp(expect, "no-replay") != 0 && strcmp(expect, "no-torch") != 0) return 22;
  if (pot_replay_available()) return 23;
  s = pot_replay_hardware_class(&hw, &err);
  if (s != POT_E_UNSUPPORTED || !err) return 24;
  if (!strstr(pot_error_message(err), strcmp(expect, "no-torch") == 0 ? "POT_WITH_TORCH=OFF" : "libpot-replay.so"))
    return 25;
  printf("no replay module: %s\n", pot_error_message(err));
  pot_error_free(err);
  return 0;
}

int main(int argc, char **argv) {
  const float w[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const uint64_t shape[2] = {2, 2};
  pot_digest d, root, leaf;
  pot_tree *tree = NULL;
  pot_bytes proof = {NULL, 0};
  char hex[2 * POT_DIGEST_SIZE + 1];
  int i;
  if (pot_abi_version() != POT_ABI_VERSION) return 1;
  if (pot_tensor_digest(&d, "w", POT_DTYPE_F32, shape, 2, w, sizeof w, 0, NULL) != POT_OK) return 2;
  if (pot_tree_open(&tree, NULL, NULL) != POT_OK) return 3;
  for (i = 0; i < 5; ++i)
    if (pot_tree_append(NULL, tree, &i, sizeof i, NULL) != POT_OK) return 4;
  if (pot_tree_root(&root, tree, 5, NULL) != POT_OK) return 5;
  if (pot_tree_leaf_hash(&leaf, tree, 2, NULL) != POT_OK) return 6;
  if (pot_tree_inclusion_proof(&proof, tree, 2, 5, NULL) != POT_OK) return 7;
  if (pot_merkle_verify_inclusion(2, 5, &leaf, proof.data, proof.len, &root, NULL) != POT_OK) return 8;
  pot_bytes_free(&proof);
  pot_tree_free(tree);
  pot_digest_to_hex(hex, &d, NULL);
  printf("consumer ok: pot %s, tensor digest %s\n", pot_version_string(), hex);
  return argc > 1 ? check_replay(argv[1]) : 0;
}
