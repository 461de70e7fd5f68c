/* c-trainer-hook: a training loop written in plain C records its run with pot.
 *
 * The "model" is a linear regression y = w.x + b (4 weights and a bias)
 * trained by mini-batch SGD on synthetic data from a fixed generator, so
 * every run is the same. After each step the trainer:
 *   1. digests its state: the parameters (param/w, param/b) and the learning
 *      rate the next step will use (hparam/lr, an F64 scalar);
 *   2. appends the step leaf (run, step, state digest, loss, update norm) to
 *      the checkpoint log, an RFC 6962 tree kept in a file; the update norm
 *      (docs/PROTOCOL.md section 13) is computed here from the weights
 *      before and after the step;
 *   3. every POST_EVERY steps posts the log root, with a consistency proof
 *      from the root posted before, which the chain checks.
 * At the end a verifier challenges one step: the trainer serves the states
 * before and after that step as safetensors files with the leaf's inclusion
 * proof; the verifier digests the second file, computes the update norm
 * between the two with pot_update_norm (the trainer's own computation must
 * agree bit for bit), rebuilds the leaf with the claimed loss and checks it
 * against the last posted root. The same state with another loss claimed is
 * rejected.
 *
 * A leaf names its run: a real trainer takes the run id from its training
 * commitment (pot_commitment_run_id, after pot_task_commitment). This sample
 * has no task, so it names its run by the SHA-256 of a label.
 *
 * Only pot.h is used, none of the LibTorch parts: it runs with any libpot.
 *
 * Usage: c_trainer_hook [WORK_DIR [STEPS [CHALLENGED_STEP]]]
 *        (defaults: a new directory in /tmp, 60 steps, step 42)
 */
#include <errno.h>
#include <math.h>
#include <pot.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define FEATURES 4
#define BATCH 16
#define MAX_STEPS 1000
#define POST_EVERY 20

typedef struct model {
  float w[FEATURES];
  float b;
  double lr; /* the learning rate of the next step: part of the state */
} model;

static const float true_w[FEATURES] = {0.5f, -1.25f, 2.0f, 0.75f};
static const float true_b = 0.3f;
static model history[MAX_STEPS + 1]; /* the trainer keeps every state it digests */

/* noreturn tells compilers (clang warns otherwise) that a value left unset
   before a die() is never read. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
static void die(const char *what, pot_error *err) {
  fprintf(stderr, "c_trainer_hook: %s: %s (%s)\n", what, pot_error_message(err), pot_status_name(pot_error_code(err)));
  pot_error_free(err);
  exit(1);
}

static const char *hex(char out[2 * POT_DIGEST_SIZE + 1], const pot_digest *d) {
  pot_digest_to_hex(out, d, NULL);
  return out;
}

/* A uniform float in [-1, 1) from a 32-bit linear congruential generator. */
static float uniform(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

/* One SGD step on a fresh batch; returns the batch's mean squared error
 * before the update (the loss the step leaf records). */
static double sgd_step(model *m, uint64_t step) {
  float x[BATCH][FEATURES], err[BATCH];
  uint32_t seed = (uint32_t)step * 2654435761u;
  double loss = 0;
  int i, j;
  for (i = 0; i < BATCH; ++i) {
    float y = true_b + 0.05f * uniform(&seed), pred = m->b;
    for (j = 0; j < FEATURES; ++j) {
      x[i][j] = uniform(&seed);
      y += true_w[j] * x[i][j];
      pred += m->w[j] * x[i][j];
    }
    err[i] = pred - y;
    loss += (double)err[i] * err[i];
  }
  for (j = 0; j < FEATURES; ++j) {
    float g = 0;
    for (i = 0; i < BATCH; ++i) g += 2.0f * err[i] * x[i][j] / BATCH;
    m->w[j] -= (float)m->lr * g;
  }
  {
    float g = 0;
    for (i = 0; i < BATCH; ++i) g += 2.0f * err[i] / BATCH;
    m->b -= (float)m->lr * g;
  }
  m->lr *= 0.97; /* the schedule: the next step's rate (a spec names it: exponential, gamma 0.97) */
  return loss / BATCH;
}

/* The update norm of docs/PROTOCOL.md section 13 from a to b, straight from
 * memory: over the parameters in bytewise name order (param/b, then param/w
 * element by element), each difference taken in double, squares summed in
 * that order, then the square root. */
static double update_norm(const model *a, const model *b) {
  double sum = 0, d;
  int i;
  d = (double)b->b - (double)a->b;
  sum += d * d;
  for (i = 0; i < FEATURES; ++i) {
    d = (double)b->w[i] - (double)a->w[i];
    sum += d * d;
  }
  return sqrt(sum);
}

/* The trainer hook: the state digest and the digest of its statistics
 * table (docs/PROTOCOL.md 5.2), straight from memory. */
static void digest_state(pot_digest *out, pot_digest *stats, const model *m) {
  const uint64_t wshape[1] = {FEATURES};
  pot_state *s = NULL;
  pot_error *err = NULL;
  pot_bytes table = {NULL, 0};
  if (pot_state_new(&s, &err) != POT_OK ||
      pot_state_add_tensor(s, "param/w", POT_DTYPE_F32, wshape, 1, m->w, sizeof m->w, &err) != POT_OK ||
      pot_state_add_tensor(s, "param/b", POT_DTYPE_F32, NULL, 0, &m->b, sizeof m->b, &err) != POT_OK ||
      pot_state_add_tensor(s, "hparam/lr", POT_DTYPE_F64, NULL, 0, &m->lr, sizeof m->lr, &err) != POT_OK ||
      pot_state_digest(out, s, &err) != POT_OK || pot_state_stats(&table, s, &err) != POT_OK ||
      pot_state_stats_digest(stats, table.data, table.len, &err) != POT_OK)
    die("digest state", err);
  pot_bytes_free(&table);
  pot_state_free(s);
}

/* The same state as a safetensors file, to serve to a verifier. */
static void write_state(const char *path, const model *m) {
  const uint64_t wshape[1] = {FEATURES};
  pot_safetensors_writer *w = NULL;
  pot_error *err = NULL;
  if (pot_safetensors_writer_new(&w, &err) != POT_OK ||
      pot_safetensors_writer_add(w, "param/w", POT_DTYPE_F32, wshape, 1, m->w, sizeof m->w, &err) != POT_OK ||
      pot_safetensors_writer_add(w, "param/b", POT_DTYPE_F32, NULL, 0, &m->b, sizeof m->b, &err) != POT_OK ||
      pot_safetensors_writer_add(w, "hparam/lr", POT_DTYPE_F64, NULL, 0, &m->lr, sizeof m->lr, &err) != POT_OK ||
      pot_safetensors_writer_write(w, path, &err) != POT_OK)
    die("write state", err);
  pot_safetensors_writer_free(w);
}

/* The verifier's check: leaf `step` = (run, step, digest of the served
 * S_step and of its statistics table, claimed loss, update norm from the
 * served S_{step-1} to S_step) is in the posted log. Returns the status. */
static pot_status verify_served(const pot_digest *run_id, const char *pre_path, const char *post_path, uint64_t step,
                                double claimed_loss, const pot_bytes *proof, uint64_t size, const pot_digest *root,
                                pot_digest *state, double *norm) {
  uint8_t leaf[POT_STEP_LEAF_SIZE];
  pot_digest leaf_hash;
  pot_safetensors *pre = NULL, *post = NULL;
  pot_error *err = NULL;
  pot_bytes table = {NULL, 0};
  pot_digest stats;
  if (pot_safetensors_digest_file(state, post_path, 0, &err) != POT_OK) die("digest served state", err);
  if (pot_safetensors_open(&pre, pre_path, &err) != POT_OK || pot_safetensors_open(&post, post_path, &err) != POT_OK ||
      pot_update_norm(norm, pre, post, "param/", &err) != POT_OK)
    die("update norm of the served states", err);
  if (pot_safetensors_stats(&table, post, 0, &err) != POT_OK ||
      pot_state_stats_digest(&stats, table.data, table.len, &err) != POT_OK)
    die("statistics of the served state", err);
  pot_bytes_free(&table);
  pot_safetensors_free(pre);
  pot_safetensors_free(post);
  if (pot_step_leaf_encode(leaf, run_id, step, state, &stats, claimed_loss, *norm, &err) != POT_OK ||
      pot_merkle_leaf_hash(&leaf_hash, leaf, sizeof leaf, &err) != POT_OK)
    die("leaf", err);
  return pot_merkle_verify_inclusion(step - 1, size, &leaf_hash, proof->data, proof->len, root, NULL);
}

int main(int argc, char **argv) {
  char dir[256], tree_path[300], pre_path[300], state_path[300], h1[2 * POT_DIGEST_SIZE + 1],
      h2[2 * POT_DIGEST_SIZE + 1];
  const uint64_t steps = argc > 2 ? strtoull(argv[2], NULL, 10) : 60;
  const uint64_t challenged = argc > 3 ? strtoull(argv[3], NULL, 10) : 42;
  uint64_t step, posted_size = 0;
  double losses[MAX_STEPS + 1], norms[MAX_STEPS + 1], served_norm = 0;
  pot_digest posted_root = {{0}}, state, stats, run_id;
  pot_tree *tree = NULL;
  pot_error *err = NULL;
  pot_bytes proof = {NULL, 0};
  pot_status st;
  model m = {{0, 0, 0, 0}, 0, 0.2};
  int ok = 1;

  if (steps < 1 || steps > MAX_STEPS || challenged < 1 || challenged > steps) {
    fprintf(stderr, "usage: c_trainer_hook [WORK_DIR [STEPS (1..%d) [CHALLENGED_STEP (1..STEPS)]]]\n", MAX_STEPS);
    return 2;
  }
  if (argc > 1) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
      perror(dir);
      return 1;
    }
  } else {
    snprintf(dir, sizeof dir, "/tmp/pot-trainer-XXXXXX");
    if (!mkdtemp(dir)) return 1;
  }
  snprintf(tree_path, sizeof tree_path, "%s/steps.tree", dir);
  unlink(tree_path); /* a new run: the tree file is an append-only log */
  printf("pot %s: a C trainer (linear regression, SGD) records %llu steps\n", pot_version_string(),
         (unsigned long long)steps);
  printf("work directory: %s\n\n", dir);

  /* The trainer: step, digest, append the step leaf, post roots. */
  if (pot_sha256(&run_id, "c-trainer-hook run", 18, &err) != POT_OK) die("run id", err);
  if (pot_tree_open(&tree, tree_path, &err) != POT_OK) die("open tree", err);
  history[0] = m;
  for (step = 1; step <= steps; ++step) {
    uint8_t leaf[POT_STEP_LEAF_SIZE];
    losses[step] = sgd_step(&m, step);
    history[step] = m;
    norms[step] = update_norm(&history[step - 1], &m);
    digest_state(&state, &stats, &m);
    if (pot_step_leaf_encode(leaf, &run_id, step, &state, &stats, losses[step], norms[step], &err) != POT_OK ||
        pot_tree_append(NULL, tree, leaf, sizeof leaf, &err) != POT_OK)
      die("append step leaf", err);
    if (step % POST_EVERY == 0 || step == steps) {
      pot_digest root;
      if (pot_tree_flush(tree, &err) != POT_OK || pot_tree_root(&root, tree, step, &err) != POT_OK) die("root", err);
      printf("step %3llu  loss %.6f  lr %.4f  state %.12s...  root %.12s...  posted\n", (unsigned long long)step,
             losses[step], m.lr, hex(h1, &state), hex(h2, &root));
      if (posted_size > 0) { /* the chain: the new root extends the last one */
        if (pot_tree_consistency_proof(&proof, tree, posted_size, step, &err) != POT_OK) die("consistency", err);
        st = pot_merkle_verify_consistency(posted_size, step, &posted_root, &root, proof.data, proof.len, &err);
        if (st != POT_OK) die("consistency rejected", err);
        printf("          chain: consistency %llu -> %llu (%zu hashes): OK\n", (unsigned long long)posted_size,
               (unsigned long long)step, proof.len / POT_DIGEST_SIZE);
        pot_bytes_free(&proof);
      }
      posted_root = root;
      posted_size = step;
    }
  }
  pot_tree_free(tree);
  printf("\nlearned w = [%.3f %.3f %.3f %.3f] b = %.3f (data made with [%.3f %.3f %.3f %.3f] %.3f)\n\n", m.w[0],
         m.w[1], m.w[2], m.w[3], m.b, true_w[0], true_w[1], true_w[2], true_w[3], true_b);

  /* Serving a challenge: the log reopened from its file, the states kept
   * for that step and the one before written as safetensors, the leaf's
   * inclusion proof. */
  snprintf(pre_path, sizeof pre_path, "%s/state-%llu.safetensors", dir, (unsigned long long)(challenged - 1));
  snprintf(state_path, sizeof state_path, "%s/state-%llu.safetensors", dir, (unsigned long long)challenged);
  write_state(pre_path, &history[challenged - 1]);
  write_state(state_path, &history[challenged]);
  if (pot_tree_open(&tree, tree_path, &err) != POT_OK) die("reopen tree", err);
  if (pot_tree_inclusion_proof(&proof, tree, challenged - 1, posted_size, &err) != POT_OK)
    die("inclusion proof", err);
  pot_tree_free(tree);

  /* The verifier, holding only the posted root and size. */
  st = verify_served(&run_id, pre_path, state_path, challenged, losses[challenged], &proof, posted_size, &posted_root,
                     &state, &served_norm);
  printf("verifier: step %llu state %.12s... loss %.6f update norm %.6g is leaf %llu of the posted log (%zu hashes): "
         "%s\n",
         (unsigned long long)challenged, hex(h1, &state), losses[challenged], served_norm,
         (unsigned long long)challenged, proof.len / POT_DIGEST_SIZE, st == POT_OK ? "OK" : pot_status_name(st));
  ok &= st == POT_OK && served_norm == norms[challenged];
  st = verify_served(&run_id, pre_path, state_path, challenged, losses[challenged] / 2, &proof, posted_size,
                     &posted_root, &state, &served_norm);
  printf("verifier: the same state claiming loss %.6f: %s%s\n", losses[challenged] / 2,
         st == POT_OK ? "ACCEPTED (wrong!)" : "REJECTED, ", st == POT_OK ? "" : pot_status_name(st));
  ok &= st == POT_E_PROOF_MISMATCH;
  pot_bytes_free(&proof);
  return ok ? 0 : 1;
}
