/* Writes a safetensors file through the C API writer: one tensor of every
 * dtype numpy can represent, bytes from the stream of docs/PROTOCOL.md's
 * vectors (stream(name, nbytes)). Used by test_safetensors_interop.py.
 * Usage: write_fixture OUT.safetensors */
#include <pot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int stream(const char *seed, uint8_t *out, size_t n) {
  size_t have = 0, len = strlen(seed);
  uint64_t j = 0;
  uint8_t in[64 + 8];
  if (len > 64) return 1;
  memcpy(in, seed, len);
  while (have < n) {
    pot_digest d;
    int k;
    for (k = 0; k < 8; ++k) in[len + k] = (uint8_t)(j >> (8 * k));
    if (pot_sha256(&d, in, len + 8, NULL) != POT_OK) return 1;
    memcpy(out + have, d.bytes, n - have < 32 ? n - have : 32);
    have += n - have < 32 ? n - have : 32;
    ++j;
  }
  return 0;
}

int main(int argc, char **argv) {
  static const char *names[] = {"BOOL", "U8", "I8", "I16", "U16", "I32", "U32",
                                "I64",  "U64", "F16", "F32", "F64"};
  uint8_t *buffers[12];
  pot_safetensors_writer *w = NULL;
  pot_error *err = NULL;
  size_t i;
  if (argc != 2) {
    fprintf(stderr, "usage: write_fixture OUT.safetensors\n");
    return 2;
  }
  if (pot_safetensors_writer_new(&w, &err) != POT_OK) return 1;
  for (i = 0; i < 12; ++i) {
    pot_dtype dt;
    uint64_t shape[2] = {3, 5};
    size_t n, k;
    if (pot_dtype_from_name(&dt, names[i], &err) != POT_OK) return 1;
    n = 15 * pot_dtype_size(dt);
    buffers[i] = malloc(n);
    if (!buffers[i] || stream(names[i], buffers[i], n)) return 1;
    if (dt == POT_DTYPE_BOOL)
      for (k = 0; k < n; ++k) buffers[i][k] &= 1;
    if (pot_safetensors_writer_add(w, names[i], dt, shape, 2, buffers[i], n, &err) != POT_OK) {
      fprintf(stderr, "%s\n", pot_error_message(err));
      return 1;
    }
  }
  if (pot_safetensors_writer_set_metadata(w, "written_by", "pot", &err) != POT_OK ||
      pot_safetensors_writer_write(w, argv[1], &err) != POT_OK) {
    fprintf(stderr, "%s\n", pot_error_message(err));
    return 1;
  }
  pot_safetensors_writer_free(w);
  for (i = 0; i < 12; ++i) free(buffers[i]);
  return 0;
}
