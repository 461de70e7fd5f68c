/* protocol_flow: a miner's side of the protocol through the C API, written
 * to files a verifier (or `pot open verify`) checks.
 *
 * A toy run over 8 samples for 6 steps: the samples are committed in a
 * dataset tree, a seeded schedule assigns batches, each step's state is
 * written as a safetensors file and its step leaf appended to the log. The
 * task that fixes all of it (spec, dataset, S_0, schedule, step count,
 * challenge policy) and the miner's training commitment for it are written
 * as JSON, the commitment checked against the task as the ledger's
 * start_training_commitment checks it. A beacon challenges 2 steps and the
 * miner writes an opening manifest for each. The toy has no model program
 * (its "training" is arithmetic in C): the spec names a placeholder program
 * digest, so nothing here can be replayed; pot open verify checks it all.
 *
 * Usage: protocol_flow OUT_DIR
 * Writes: task.json, commitment.json, log.json ({"size", "root"}),
 *         challenges.txt, opening-<t>.bin, state-<t>.safetensors,
 *         sample-<i>.safetensors. */
#include <pot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES 8
#define STEPS 6
#define BATCH 2
#define SEED 1234

/* The task's execution spec (docs/cli.md "Spec"). Its steps draw per-step
 * random numbers (dropout under per-step seeds, which name the run), so
 * each run of this listed task is its own trajectory (without them the
 * task is a one-trajectory task, paid once: docs/ledger.md 2.3). */
static const char SPEC[] =
    "{\"framework\": \"pytorch\", \"framework_version\": \"1.13.1\",\n"
    " \"model_program_digest\": \"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\",\n"
    " \"dtype\": \"F32\", \"attention_backend\": \"math\", \"dropout\": 0.1, \"other_rng_use\": false,\n"
    " \"optimizer\": {\"kind\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.0, \"dampening\": 0.0, \"nesterov\": false,\n"
    "               \"weight_decay\": 0.0},\n"
    " \"grad_clip_max_norm\": 0.0, \"grad_accum_microbatches\": 1, \"batch_size\": 2,\n"
    " \"deterministic_algorithms\": false, \"intra_op_threads\": 1, \"hardware_class\": \"cpu-x86_64/aten:avx2/onednn:avx2\",\n"
    " \"seed_policy\": {\"kind\": \"per_step\", \"base_seed\": 1234}, \"norm_bucket_resolution\": 16}";

static void die(const char *what, pot_error *err) {
  fprintf(stderr, "protocol_flow: %s: %s\n", what, err ? pot_error_message(err) : "failed");
  pot_error_free(err);
  exit(1);
}

static unsigned char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf;
  long n;
  if (!f) die(path, NULL);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) die(path, NULL);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void write_all(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len) die(path, NULL);
  fclose(f);
}

static void write_vector(const char *path, const char *name, const float *v, uint64_t n) {
  pot_safetensors_writer *w = NULL;
  pot_error *err = NULL;
  if (pot_safetensors_writer_new(&w, &err) || pot_safetensors_writer_add(w, name, POT_DTYPE_F32, &n, 1, v, n * 4, &err) ||
      pot_safetensors_writer_write(w, path, &err))
    die(path, err);
  pot_safetensors_writer_free(w);
}

static void hex(char out[65], const pot_digest *d) { pot_digest_to_hex(out, d, NULL); }

/* Leaf t of the run: it names the run and commits the digest of S_t's
 * statistics table (section 5.2), the loss and the update norm from S_{t-1}
 * to S_t (section 13 over "param/"). */
static void step_leaf_table(uint8_t leaf[POT_STEP_LEAF_SIZE], pot_bytes *table_out, const char *dir,
                            const pot_digest *run_id, const pot_digest *states, uint64_t t) {
  char a_path[512], b_path[512];
  pot_safetensors *a = NULL, *b = NULL;
  pot_error *err = NULL;
  double norm = 0;
  pot_bytes table = {NULL, 0};
  pot_digest stats;
  snprintf(a_path, sizeof a_path, "%s/state-%llu.safetensors", dir, (unsigned long long)(t - 1));
  snprintf(b_path, sizeof b_path, "%s/state-%llu.safetensors", dir, (unsigned long long)t);
  if (pot_safetensors_open(&a, a_path, &err) || pot_safetensors_open(&b, b_path, &err) ||
      pot_update_norm(&norm, a, b, "param/", &err) || pot_safetensors_stats(&table, b, 1, &err) ||
      pot_state_stats_digest(&stats, table.data, table.len, &err) ||
      pot_step_leaf_encode(leaf, run_id, t, &states[t], &stats, 1.0 / (double)t, norm, &err))
    die("leaf", err);
  if (table_out)
    *table_out = table;
  else
    pot_bytes_free(&table);
  pot_safetensors_free(a);
  pot_safetensors_free(b);
}

static void step_leaf(uint8_t leaf[POT_STEP_LEAF_SIZE], const char *dir, const pot_digest *run_id,
                      const pot_digest *states, uint64_t t) {
  step_leaf_table(leaf, NULL, dir, run_id, states, t);
}

/* The run record every opening serves (section 18, check 32): every leaf,
 * the statistics table of every state, and the steps pot_run_flags finds
 * flagged (read from its JSON: each flagged step's "step" key). */
struct run_record {
  uint8_t leaves[STEPS * POT_STEP_LEAF_SIZE];
  pot_bytes tables[STEPS];
  const uint8_t *table_ptrs[STEPS];
  size_t table_lens[STEPS];
  uint64_t flagged[STEPS];
  size_t flagged_len;
};

static void run_record_build(struct run_record *r, const char *dir, const pot_digest *run_id,
                             const pot_digest *states) {
  pot_bytes flags = {NULL, 0};
  pot_error *err = NULL;
  const char *p;
  uint64_t t;
  for (t = 1; t <= STEPS; ++t) {
    step_leaf_table(r->leaves + (t - 1) * POT_STEP_LEAF_SIZE, &r->tables[t - 1], dir, run_id, states, t);
    r->table_ptrs[t - 1] = r->tables[t - 1].data;
    r->table_lens[t - 1] = r->tables[t - 1].len;
  }
  if (pot_run_flags(&flags, r->table_ptrs, r->table_lens, STEPS, &err)) die("run flags", err);
  r->flagged_len = 0;
  for (p = strstr((const char *)flags.data, "\"step\": "); p && r->flagged_len < STEPS;
       p = strstr(p + 1, "\"step\": "))
    r->flagged[r->flagged_len++] = strtoull(p + 8, NULL, 10);
  pot_bytes_free(&flags);
}

int main(int argc, char **argv) {
  const char *dir;
  char path[512], h[65], h2[65], h3[65], h4[65];
  pot_tree *dataset = NULL, *schedule = NULL, *log = NULL;
  pot_digest states[STEPS + 1], sroot, droot, lroot, run_id, d;
  pot_commitment *c = NULL;
  pot_task *task = NULL;
  pot_spec *spec = NULL;
  pot_digest task_id, spec_digest;
  char h5[65], h6[65];
  pot_error *err = NULL;
  float w[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  uint64_t t, i, challenged[2];
  struct run_record record;
  char json[4096];
  FILE *f;

  if (argc != 2) {
    fprintf(stderr, "usage: protocol_flow OUT_DIR\n");
    return 2;
  }
  dir = argv[1];
  if (pot_tree_open(&dataset, NULL, &err) || pot_tree_open(&schedule, NULL, &err) || pot_tree_open(&log, NULL, &err))
    die("trees", err);
  for (i = 0; i < SAMPLES; ++i) { /* the dataset */
    const float x[2] = {(float)i, (float)(i * i)};
    unsigned char *bytes;
    size_t len;
    snprintf(path, sizeof path, "%s/sample-%llu.safetensors", dir, (unsigned long long)i);
    write_vector(path, "x", x, 2);
    bytes = read_all(path, &len);
    if (pot_sample_digest(&d, bytes, len, &err) || pot_tree_append(NULL, dataset, d.bytes, 32, &err)) die("sample", err);
    free(bytes);
  }
  for (t = 0; t <= STEPS; ++t) { /* training: schedule and states */
    if (t > 0) {
      pot_bytes e = {NULL, 0};
      for (i = 0; i < 4; ++i) w[i] = w[i] * 0.9f + 0.01f * (float)t;
      if (pot_seeded_schedule_entry(&e, SEED, SAMPLES, BATCH, 1, t, &err) ||
          pot_tree_append(NULL, schedule, e.data, e.len, &err))
        die("schedule", err);
      pot_bytes_free(&e);
      snprintf(path, sizeof path, "%s/state-%llu.safetensors", dir, (unsigned long long)t);
      write_vector(path, "param/w", w, 4);
      if (pot_safetensors_digest_file(&states[t], path, 1, &err)) die("state", err);
    } else {
      snprintf(path, sizeof path, "%s/state-0.safetensors", dir);
      write_vector(path, "param/w", w, 4);
      if (pot_safetensors_digest_file(&states[0], path, 1, &err)) die("state", err);
    }
  }
  if (pot_tree_root(&sroot, schedule, STEPS, &err) || pot_tree_root(&droot, dataset, SAMPLES, &err))
    die("roots", err);
  hex(h, &states[0]);
  hex(h2, &sroot);
  hex(h3, &droot);
  /* The task owner's part: the task, posted before anyone trains. */
  snprintf(json, sizeof json,
           "{\"owner\": \"6f776e6572\", \"spec\": %s,\n"
           " \"dataset_root\": \"%s\", \"dataset_size\": %d,\n"
           " \"initial_state\": {\"published_digest\": \"%s\"}, \"schedule\": {\"listed_root\": \"%s\"},\n"
           " \"min_steps\": %d, \"max_steps\": %d, \"challenge_policy\": {\"rounds\": 2, \"mode\": \"bitwise\", \"committee_size\": 3},\n \"end_height\": 100000}\n",
           SPEC, h3, SAMPLES, h, h2, STEPS, STEPS);
  snprintf(path, sizeof path, "%s/task.json", dir);
  write_all(path, json, strlen(json));
  if (pot_task_from_json(&task, json, &err) || pot_task_id(&task_id, task, &err) ||
      pot_task_spec(&spec, task, &err) || pot_spec_digest(&spec_digest, spec, &err))
    die("task", err);
  /* The miner's commitment: every field but its identity is the task's. */
  hex(h5, &task_id);
  hex(h6, &spec_digest);
  snprintf(json, sizeof json,
           "{\"task_id\": \"%s\", \"initial_state_digest\": \"%s\", \"schedule_root\": \"%s\",\n"
           " \"dataset_root\": \"%s\", \"dataset_size\": %d, \"spec_digest\": \"%s\",\n"
           " \"declared_steps\": %d, \"miner_identity\": \"6d696e6572\"}\n",
           h5, h, h2, h3, SAMPLES, h6, STEPS);
  snprintf(path, sizeof path, "%s/commitment.json", dir);
  write_all(path, json, strlen(json));
  if (pot_commitment_from_json(&c, json, &err) || pot_task_check_commitment(task, c, &err) ||
      pot_commitment_run_id(&run_id, c, &err))
    die("commitment", err);
  /* The step log: its leaves name the run, so the commitment comes first. */
  for (t = 1; t <= STEPS; ++t) {
    uint8_t leaf[POT_STEP_LEAF_SIZE];
    step_leaf(leaf, dir, &run_id, states, t);
    if (pot_tree_append(NULL, log, leaf, sizeof leaf, &err)) die("log", err);
  }
  if (pot_tree_root(&lroot, log, STEPS, &err)) die("log root", err);
  hex(h4, &lroot);
  snprintf(json, sizeof json, "{\"size\": %d, \"root\": \"%s\"}\n", STEPS, h4);
  snprintf(path, sizeof path, "%s/log.json", dir);
  write_all(path, json, strlen(json));

  /* Challenge: 2 steps from a beacon; open each. */
  if (pot_challenge_derive(challenged, 2, (const uint8_t *)"beacon", 6, &run_id, STEPS, &err)) die("challenge", err);
  snprintf(path, sizeof path, "%s/challenges.txt", dir);
  f = fopen(path, "w");
  if (!f) die(path, NULL);
  run_record_build(&record, dir, &run_id, states);
  printf("run record: %d leaves and tables, %zu flagged steps\n", STEPS, record.flagged_len);
  for (i = 0; i < 2; ++i) {
    pot_opening *o = NULL;
    pot_bytes proof = {NULL, 0}, entry = {NULL, 0}, manifest = {NULL, 0};
    uint8_t leaf[POT_STEP_LEAF_SIZE];
    uint64_t idx[BATCH], k;
    uint32_t micro[1];
    size_t n = BATCH, m = 1;
    char ref[64];
    t = challenged[i];
    fprintf(f, "%llu\n", (unsigned long long)t);
    if (pot_opening_new(&o, &run_id, t, STEPS, &states[t - 1], &err)) die("opening", err);
    if (t > 1) {
      step_leaf(leaf, dir, &run_id, states, t - 1);
      if (pot_tree_inclusion_proof(&proof, log, t - 2, STEPS, &err) ||
          pot_opening_set_pre_leaf(o, leaf, sizeof leaf, proof.data, proof.len, &err))
        die("pre leaf", err);
      pot_bytes_free(&proof);
    }
    step_leaf(leaf, dir, &run_id, states, t);
    if (pot_tree_inclusion_proof(&proof, log, t - 1, STEPS, &err) ||
        pot_opening_set_post_leaf(o, leaf, sizeof leaf, proof.data, proof.len, &err))
      die("post leaf", err);
    pot_bytes_free(&proof);
    if (pot_seeded_schedule_entry(&entry, SEED, SAMPLES, BATCH, 1, t, &err) ||
        pot_tree_inclusion_proof(&proof, schedule, t - 1, STEPS, &err) ||
        pot_opening_set_schedule(o, entry.data, entry.len, proof.data, proof.len, &err) ||
        pot_schedule_entry_decode(NULL, idx, &n, micro, &m, entry.data, entry.len, &err))
      die("schedule entry", err);
    pot_bytes_free(&proof);
    for (k = 0; k < n; ++k) {
      unsigned char *bytes;
      size_t len;
      snprintf(path, sizeof path, "%s/sample-%llu.safetensors", dir, (unsigned long long)idx[k]);
      bytes = read_all(path, &len);
      if (pot_tree_inclusion_proof(&proof, dataset, idx[k], SAMPLES, &err) ||
          pot_opening_add_sample(o, idx[k], bytes, len, proof.data, proof.len, &err))
        die("sample", err);
      free(bytes);
      pot_bytes_free(&proof);
    }
    snprintf(ref, sizeof ref, "state-%llu.safetensors", (unsigned long long)(t - 1));
    if (pot_opening_set_run_record(o, record.leaves, sizeof record.leaves, record.table_ptrs, record.table_lens, STEPS,
                                   record.flagged, record.flagged_len, &err))
      die("run record", err);
    if (pot_opening_set_state_refs(o, ref, NULL, &err) || pot_opening_encode(&manifest, o, &err)) die("encode", err);
    snprintf(path, sizeof path, "%s/opening-%llu.bin", dir, (unsigned long long)t);
    write_all(path, manifest.data, manifest.len);
    printf("opened step %llu: %zu-byte manifest, %zu samples\n", (unsigned long long)t, manifest.len, n);
    pot_bytes_free(&manifest);
    pot_bytes_free(&entry);
    pot_opening_free(o);
  }
  fclose(f);
  for (t = 0; t < STEPS; ++t) pot_bytes_free(&record.tables[t]);
  hex(h, &run_id);
  printf("run %s: %d steps, log root %s\n", h, STEPS, h4);
  pot_commitment_free(c);
  pot_spec_free(spec);
  pot_task_free(task);
  pot_tree_free(dataset);
  pot_tree_free(schedule);
  pot_tree_free(log);
  return 0;
}
