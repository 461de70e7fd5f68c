/* digest_and_prove: the foundation of pot in one run, through the C API.
 *
 * A toy "training run" updates a small model state for 20 steps. After every
 * step the state is digested and the digest appended to a checkpoint log
 * (an RFC 6962 tree stored in a file). Roots are "posted" at steps 10 and 20
 * with a consistency proof between them. A verifier then challenges step 7:
 * it receives the step-7 state as a safetensors file, digests it, and checks
 * the digest's inclusion proof against the posted root. A tampered state
 * (one flipped bit) is rejected.
 *
 * The leaf data here is the bare state digest; the protocol's step leaf (step,
 * state digest, loss) comes with the commitment layer.
 *
 * Usage: digest_and_prove [WORK_DIR]   (default: a new directory in /tmp)
 */
#include <pot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROWS 256
#define COLS 256
#define STEPS 20

static float weight[ROWS * COLS];
static float bias[COLS];

static void die(const char *what, pot_error *err) {
  fprintf(stderr, "digest_and_prove: %s: %s (%s)\n", what, pot_error_message(err),
          pot_status_name(pot_error_code(err)));
  pot_error_free(err);
  exit(1);
}

static void hex(char out[65], const pot_digest *d) { pot_digest_to_hex(out, d, NULL); }

/* One synthetic SGD-like update: deterministic, so the run is reproducible. */
static void train_step(int step) {
  size_t i;
  for (i = 0; i < ROWS * COLS; ++i) weight[i] -= 0.01f * (float)((i * 7 + (size_t)step) % 13) / 13.0f;
  for (i = 0; i < COLS; ++i) bias[i] += 0.001f * (float)step;
}

static void state_digest(pot_digest *out) {
  const uint64_t wshape[2] = {ROWS, COLS}, bshape[1] = {COLS};
  pot_state *s = NULL;
  pot_error *err = NULL;
  if (pot_state_new(&s, &err) != POT_OK) die("state", err);
  if (pot_state_add_tensor(s, "model.weight", POT_DTYPE_F32, wshape, 2, weight, sizeof weight, &err) != POT_OK ||
      pot_state_add_tensor(s, "model.bias", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, &err) != POT_OK ||
      pot_state_digest(out, s, &err) != POT_OK)
    die("digest", err);
  pot_state_free(s);
}

static void write_state(const char *path) {
  const uint64_t wshape[2] = {ROWS, COLS}, bshape[1] = {COLS};
  pot_safetensors_writer *w = NULL;
  pot_error *err = NULL;
  if (pot_safetensors_writer_new(&w, &err) != POT_OK ||
      pot_safetensors_writer_add(w, "model.weight", POT_DTYPE_F32, wshape, 2, weight, sizeof weight, &err) != POT_OK ||
      pot_safetensors_writer_add(w, "model.bias", POT_DTYPE_F32, bshape, 1, bias, sizeof bias, &err) != POT_OK ||
      pot_safetensors_writer_write(w, path, &err) != POT_OK)
    die("write checkpoint", err);
  pot_safetensors_writer_free(w);
}

int main(int argc, char **argv) {
  char dir[256], tree_path[320], ckpt_path[320], tampered_path[320], h[65];
  pot_tree *tree = NULL;
  pot_error *err = NULL;
  pot_digest root10, root20, leaf, served;
  pot_bytes proof = {NULL, 0};
  pot_status st;
  FILE *f;
  int step;
  const int challenged = 7;

  if (argc > 1) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
  } else {
    snprintf(dir, sizeof dir, "/tmp/pot-sample-XXXXXX");
    if (!mkdtemp(dir)) return 1;
  }
  snprintf(tree_path, sizeof tree_path, "%s/checkpoints.tree", dir);
  snprintf(ckpt_path, sizeof ckpt_path, "%s/state-%d.safetensors", dir, challenged);
  snprintf(tampered_path, sizeof tampered_path, "%s/state-%d-tampered.safetensors", dir, challenged);
  unlink(tree_path);
  printf("pot %s (ABI %u): digest a state, build a log, prove and verify a step\n", pot_version_string(),
         (unsigned)pot_abi_version());
  printf("work directory: %s\n\n", dir);

  /* Trainer: step, digest, append; post roots at 10 and 20. */
  if (pot_tree_open(&tree, tree_path, &err) != POT_OK) die("open tree", err);
  for (step = 1; step <= STEPS; ++step) {
    pot_digest d;
    train_step(step);
    state_digest(&d);
    if (pot_tree_append(NULL, tree, d.bytes, sizeof d.bytes, &err) != POT_OK) die("append", err);
    if (step == challenged) write_state(ckpt_path);
    if (step % 5 == 0) {
      hex(h, &d);
      printf("trainer  step %2d  state %.16s...  log size %llu\n", step, h,
             (unsigned long long)pot_tree_size(tree));
    }
  }
  if (pot_tree_flush(tree, &err) != POT_OK) die("flush", err);
  if (pot_tree_root(&root10, tree, 10, &err) != POT_OK || pot_tree_root(&root20, tree, 20, &err) != POT_OK)
    die("root", err);
  hex(h, &root10);
  printf("\nposted   root at size 10: %s\n", h);
  hex(h, &root20);
  printf("posted   root at size 20: %s\n", h);

  /* Chain: the later root must extend the earlier one. */
  if (pot_tree_consistency_proof(&proof, tree, 10, 20, &err) != POT_OK) die("consistency proof", err);
  st = pot_merkle_verify_consistency(10, 20, &root10, &root20, proof.data, proof.len, &err);
  if (st != POT_OK) die("consistency", err);
  printf("ledger   consistency 10 -> 20 (%zu hashes): OK\n\n", proof.len / POT_DIGEST_SIZE);
  pot_bytes_free(&proof);

  /* Verifier: challenge step 7 (leaf index 6); digest the served state. */
  if (pot_safetensors_digest_file(&served, ckpt_path, 0, &err) != POT_OK) die("digest served state", err);
  if (pot_merkle_leaf_hash(&leaf, served.bytes, sizeof served.bytes, &err) != POT_OK) die("leaf", err);
  if (pot_tree_inclusion_proof(&proof, tree, challenged - 1, 20, &err) != POT_OK) die("inclusion proof", err);
  st = pot_merkle_verify_inclusion(challenged - 1, 20, &leaf, proof.data, proof.len, &root20, &err);
  if (st != POT_OK) die("served state rejected", err);
  hex(h, &served);
  printf("verifier step %d state %.16s... is in the posted log (%zu hashes): OK\n", challenged, h,
         proof.len / POT_DIGEST_SIZE);

  /* A cheating server flips one bit of the weights. */
  {
    pot_safetensors *file = NULL;
    const void *data;
    size_t nbytes;
    uint8_t *copy;
    if (pot_safetensors_open(&file, ckpt_path, &err) != POT_OK) die("open", err);
    if (pot_safetensors_tensor(NULL, NULL, NULL, NULL, &data, &nbytes, file, 1, &err) != POT_OK) die("tensor", err);
    copy = malloc(nbytes);
    memcpy(copy, data, nbytes);
    copy[12345] ^= 0x01;
    memcpy(weight, copy, nbytes);
    free(copy);
    pot_safetensors_free(file);
  }
  write_state(tampered_path);
  if (pot_safetensors_digest_file(&served, tampered_path, 0, &err) != POT_OK) die("digest", err);
  pot_merkle_leaf_hash(&leaf, served.bytes, sizeof served.bytes, NULL);
  st = pot_merkle_verify_inclusion(challenged - 1, 20, &leaf, proof.data, proof.len, &root20, &err);
  if (st == POT_OK) {
    fprintf(stderr, "digest_and_prove: a tampered state was accepted\n");
    return 1;
  }
  printf("verifier tampered step %d state (1 bit flipped): REJECTED, %s\n", challenged, pot_status_name(st));
  pot_error_free(err);
  pot_bytes_free(&proof);
  pot_tree_free(tree);
  f = fopen(tree_path, "rb");
  if (f) {
    fseek(f, 0, SEEK_END);
    printf("\nlog file %s: %ld bytes for %d leaves\n", tree_path, ftell(f), STEPS);
    fclose(f);
  }
  return 0;
}
