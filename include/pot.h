/*
 * pot.h - the C API of pot, the Proof of Training SDK.
 *
 * This is the only public interface of libpot. Conventions:
 *  - Every fallible function returns a pot_status (POT_OK = 0). When it fails
 *    and `err` is not NULL, *err receives an owned pot_error with the code and
 *    a message; free it with pot_error_free(). *err is written only on
 *    failure. There is no thread-local "last error".
 *  - Outputs come first, inputs next, `pot_error **err` last. On failure the
 *    outputs are left untouched.
 *  - Handles are opaque: pot_X_new() creates, pot_X_free() destroys, and every
 *    free function accepts NULL.
 *  - Digests are written into caller storage (pot_digest); variable-size
 *    results come back as pot_bytes, freed with pot_bytes_free().
 *  - Unless a function says otherwise, distinct handles may be used from
 *    distinct threads at once, functions without a handle are thread-safe, and
 *    one handle must not be used by two threads at once; functions that only
 *    read a handle (const) may share it. docs/concurrency.md gives the
 *    contract of every function.
 *  - Strings are NUL-terminated UTF-8. Tensor bytes are little-endian,
 *    row-major (C order).
 *  - A buffer parameter X is followed by `size_t X_len`, its length in
 *    elements of X's type (bytes for uint8_t and void): data, data_len;
 *    shape, shape_len. Arrays that must be as long as each other share one
 *    length after the last (a_claims, b_claims, claims_len). A list of
 *    buffers is X (the pointers), X_lens (their lengths), X_len (how many).
 *    A caller-provided output array with a `size_t *X_len` takes its
 *    capacity in and gives the length needed back.
 *  - Result structs (pot_bisection_info, pot_replay_result,
 *    pot_verify_result) begin with `uint32_t struct_size`, which the caller
 *    sets to sizeof the struct before the call: POT_X_INIT does both. A
 *    later release with the same POT_ABI_VERSION may append fields at the
 *    end, never move or remove one; it writes only the fields that fit in
 *    struct_size, so a program built against an older header keeps
 *    working. A struct_size smaller than this header's sizeof is refused
 *    with POT_E_INVALID_ARGUMENT (nothing written). Structs that are members
 *    of a result (pot_gradient_trace, pot_digest) never change: a new figure
 *    becomes a new field at the end of the result.
 *  - ABI policy: POT_ABI_VERSION (the SONAME major) changes when a function
 *    or type of this header changes incompatibly, for every such change of
 *    a release at once; functions, enum values, status codes and result
 *    fields are only ever appended within one ABI version.
 *
 * docs/PROTOCOL.md defines every digest, leaf and proof byte for byte.
 */
#ifndef POT_H
#define POT_H

#include <stddef.h>
#include <stdint.h>

#if defined(POT_BUILDING) && defined(__GNUC__)
#define POT_API __attribute__((visibility("default")))
#else
#define POT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions and constants                                                    */
/* ------------------------------------------------------------------------ */

#define POT_VERSION_MAJOR 0
#define POT_VERSION_MINOR 3
#define POT_VERSION_PATCH 0
#define POT_VERSION_STRING "0.3.0"
/* Changes only when a released function or type changes incompatibly; it is
 * the SONAME major of libpot.so. */
#define POT_ABI_VERSION 4
/* The protocol version (docs/PROTOCOL.md) this library implements: the
 * protocol_version of the tasks and commitments it writes and the only one
 * it reads (another is refused with POT_E_UNSUPPORTED naming it). */
#define POT_PROTOCOL_VERSION 2

#define POT_DIGEST_SIZE 32
#define POT_CHUNK_SIZE 65536
#define POT_MAX_NAME_BYTES 1024
#define POT_MAX_DIMS 32
/* The longest JSON text a function accepts (pot_spec_from_json,
 * pot_commitment_from_json, pot_ledger_apply): POT_E_LIMIT beyond, before
 * parsing. The largest valid call is a few KiB. */
#define POT_MAX_JSON_BYTES 1048576

/* Version of the library loaded at run time, e.g. "0.3.0". Static storage. */
POT_API const char *pot_version_string(void);
/* ABI version of the library loaded at run time. Bindings compare it with
 * the POT_ABI_VERSION they were built against. */
POT_API uint32_t pot_abi_version(void);
/* POT_PROTOCOL_VERSION of the library loaded at run time. */
POT_API uint32_t pot_protocol_version(void);
/* POT_DIGEST_SIZE, for bindings that cannot read macros. */
POT_API size_t pot_digest_size(void);
/* POT_CHUNK_SIZE: bytes per chunk leaf of a tensor digest. */
POT_API uint32_t pot_chunk_size(void);
/* POT_MAX_NAME_BYTES: the longest tensor name accepted. */
POT_API size_t pot_max_name_bytes(void);
/* POT_MAX_DIMS: the largest tensor rank accepted. */
POT_API size_t pot_max_dims(void);

/* ------------------------------------------------------------------------ */
/* Status codes and errors                                                   */
/* ------------------------------------------------------------------------ */

/* Values are frozen; new codes are only appended. */
typedef enum pot_status {
  POT_OK = 0,
  POT_E_INVALID_ARGUMENT = 1, /* NULL pointer, bad enum, inconsistent arguments */
  POT_E_OUT_OF_MEMORY = 2,
  POT_E_IO = 3,             /* a file could not be opened, read or written */
  POT_E_MALFORMED = 4,      /* input bytes do not parse as the expected format */
  POT_E_LIMIT = 5,          /* input exceeds a documented bound */
  POT_E_OUT_OF_RANGE = 6,   /* index or size outside the valid range */
  POT_E_PROOF_LENGTH = 7,   /* proof has the wrong number of hashes */
  POT_E_PROOF_MISMATCH = 8, /* proof is well-formed but does not verify */
  POT_E_DUPLICATE = 9,      /* a name given twice */
  POT_E_STATE = 10,         /* call not valid in the handle's current state */
  POT_E_UNSUPPORTED = 11,   /* valid input this version does not support */
  POT_E_BACKEND = 12,       /* OpenSSL (or LibTorch) reported a failure */
  POT_E_INTERNAL = 13,      /* a bug in pot; please report it */
  POT_E_NOT_FOUND = 14,     /* no entry under that name */
  POT_E_PERMISSION = 15,    /* the caller's identity may not do this */
  POT_E_CONFLICT = 16,      /* contradicts what is already recorded */
  POT_E_NONFINITE = 17,     /* a loss or norm that must be finite is NaN or infinite */
  /* Not a status: makes the enum 32-bit and every value in range. */
  POT_STATUS_MAX_ENUM_ = 0x7FFFFFFF
} pot_status;

typedef struct pot_error pot_error;

/* Upper-case name of a status ("POT_E_MALFORMED"); "POT_E_UNKNOWN" for a
 * value that is not a pot_status. Static storage. */
POT_API const char *pot_status_name(pot_status status);
/* The number of statuses this library has, POT_OK included: 0 ..
 * pot_status_count() - 1 each have a name. Bindings check their own list of
 * statuses against it (a libpot with more reports what they do not know as
 * an unknown status). */
POT_API uint32_t pot_status_count(void);
/* Code of an error (POT_E_INVALID_ARGUMENT when error is NULL). */
POT_API pot_status pot_error_code(const pot_error *error);
/* Message of an error, valid until pot_error_free (never NULL). */
POT_API const char *pot_error_message(const pot_error *error);
POT_API void pot_error_free(pot_error *error);

/* ------------------------------------------------------------------------ */
/* Digests and byte buffers                                                  */
/* ------------------------------------------------------------------------ */

typedef struct pot_digest {
  uint8_t bytes[POT_DIGEST_SIZE];
} pot_digest;

/* A buffer allocated by pot; release it with pot_bytes_free(). */
typedef struct pot_bytes {
  uint8_t *data;
  size_t len;
} pot_bytes;

/* Frees b->data and sets *b to {NULL, 0}. Accepts NULL. */
POT_API void pot_bytes_free(pot_bytes *b);

/* Writes the 64 lower-case hex characters of d and a NUL into out. */
POT_API pot_status pot_digest_to_hex(char out[2 * POT_DIGEST_SIZE + 1], const pot_digest *d,
                                     pot_error **err);
/* Parses exactly 64 hex characters (either case). POT_E_MALFORMED otherwise. */
POT_API pot_status pot_digest_from_hex(pot_digest *out, const char *hex, pot_error **err);
/* Plain SHA-256 of data (no domain tag). data may be NULL when data_len is 0. */
POT_API pot_status pot_sha256(pot_digest *out, const void *data, size_t data_len, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Tensors and states                                                        */
/* ------------------------------------------------------------------------ */

/* Element types. The values are part of the tensor digest: frozen. */
typedef enum pot_dtype {
  POT_DTYPE_BOOL = 1,
  POT_DTYPE_U8 = 2,
  POT_DTYPE_I8 = 3,
  POT_DTYPE_I16 = 4,
  POT_DTYPE_U16 = 5,
  POT_DTYPE_I32 = 6,
  POT_DTYPE_U32 = 7,
  POT_DTYPE_I64 = 8,
  POT_DTYPE_U64 = 9,
  POT_DTYPE_F16 = 10,
  POT_DTYPE_BF16 = 11,
  POT_DTYPE_F32 = 12,
  POT_DTYPE_F64 = 13,
  /* Not a dtype: makes the enum 32-bit and every value in range. */
  POT_DTYPE_MAX_ENUM_ = 0x7FFFFFFF
} pot_dtype;

/* Bytes per element, or 0 when dtype is not a pot_dtype. */
POT_API size_t pot_dtype_size(pot_dtype dtype);
/* The safetensors name ("F32", "BF16", ...), or NULL. Static storage. */
POT_API const char *pot_dtype_name(pot_dtype dtype);
/* Inverse of pot_dtype_name. POT_E_UNSUPPORTED for an unknown name. */
POT_API pot_status pot_dtype_from_name(pot_dtype *out, const char *name, pot_error **err);

/* Canonical digest of one tensor: its bytes hashed as POT_CHUNK_SIZE chunks
 * under an RFC 6962 tree, bound with name, dtype and shape. data_len must equal
 * the element size times the product of the shape (POT_E_INVALID_ARGUMENT
 * otherwise); the name must be 1..POT_MAX_NAME_BYTES bytes of UTF-8 without
 * NUL; at most POT_MAX_DIMS dims (POT_E_LIMIT). threads = 0 uses all cores;
 * the digest does not depend on it. Reads data only during the call. */
POT_API pot_status pot_tensor_digest(pot_digest *out, const char *name, pot_dtype dtype,
                                     const uint64_t *shape, size_t shape_len, const void *data,
                                     size_t data_len, uint32_t threads, pot_error **err);

/* The tensor names of a training state (docs/PROTOCOL.md 21.1), for
 * bindings that build states: one spelling, libpot's. */
typedef enum pot_state_part {
  POT_STATE_PARAM_PREFIX = 1,  /* "param/": "param/<parameter>" */
  POT_STATE_BUFFER_PREFIX = 2, /* "buffer/": "buffer/<buffer>" */
  POT_STATE_OPTIM_PREFIX = 3,  /* "optim/": "optim/<parameter>/<key>" */
  POT_STATE_LR = 4,            /* "hparam/lr": group 0's rate; group g's is "hparam/lr/<g>" */
  POT_STATE_RNG = 5,           /* "rng/cpu": the CPU generator's state */
  POT_STATE_GRAD_PREFIX = 6,   /* "grad/": a witness's gradient state, "grad/<parameter>" */
  POT_STATE_PART_MAX_ENUM_ = 0x7FFFFFFF
} pot_state_part;

/* The name or prefix of a state part; NULL for a value that is not a
 * pot_state_part. Static storage. */
POT_API const char *pot_state_part_name(pot_state_part part);

/* A state being digested: named tensors (parameters, buffers, optimizer
 * state...), digested as they are added; the bytes are not kept. */
typedef struct pot_state pot_state;

POT_API pot_status pot_state_new(pot_state **out, pot_error **err);
POT_API void pot_state_free(pot_state *state);
/* Threads used to hash each tensor added later (0 = all cores, the default). */
POT_API pot_status pot_state_set_threads(pot_state *state, uint32_t threads, pot_error **err);
/* Digests a tensor and adds it. Arguments as pot_tensor_digest;
 * POT_E_DUPLICATE when the name is present; POT_E_LIMIT past 2^20 tensors. */
POT_API pot_status pot_state_add_tensor(pot_state *state, const char *name, pot_dtype dtype,
                                        const uint64_t *shape, size_t shape_len, const void *data,
                                        size_t data_len, pot_error **err);
/* Adds a tensor digest computed elsewhere (pot_tensor_digest or a
 * pot_tensor_assembler on another rank of a sharded run). */
POT_API pot_status pot_state_add_tensor_digest(pot_state *state, const char *name,
                                               const pot_digest *tensor_digest, pot_error **err);
/* Number of tensors added. 0 for NULL. */
POT_API size_t pot_state_tensor_count(const pot_state *state);
/* The state digest over the tensors added so far (canonical name order). */
POT_API pot_status pot_state_digest(pot_digest *out, const pot_state *state, pot_error **err);
/* Proof that the named tensor belongs to the state (docs/PROTOCOL.md 5.1):
 * its position, the tensor count, the root over the tensor digests and the
 * inclusion path, so a verifier holding only that tensor can check it
 * against the state digest. POT_E_NOT_FOUND when the name is absent. */
POT_API pot_status pot_state_tensor_proof(pot_bytes *out, const pot_state *state, const char *name,
                                          pot_error **err);
/* POT_OK when tensor_digest is part of the state with state_digest, by the
 * proof of pot_state_tensor_proof. POT_E_PROOF_MISMATCH when it is not,
 * POT_E_MALFORMED/POT_E_LIMIT for proof bytes that do not decode,
 * POT_E_OUT_OF_RANGE/POT_E_PROOF_LENGTH for inconsistent positions.
 * Thread-safe. */
POT_API pot_status pot_state_verify_tensor(const pot_digest *state_digest,
                                           const pot_digest *tensor_digest, const uint8_t *proof,
                                           size_t proof_len, pot_error **err);

/* Sharded states: a rank holding bytes [offset, offset + data_len) of a tensor of
 * total_bytes bytes hashes them into a small chunk-range record (a few
 * 32-byte hashes, docs/PROTOCOL.md) to send to the assembling rank. offset
 * must be a multiple of POT_CHUNK_SIZE, and data_len too unless the range ends the
 * tensor (POT_E_INVALID_ARGUMENT). */
POT_API pot_status pot_chunk_range_hash(pot_bytes *out, const void *data, size_t data_len,
                                        uint64_t offset, uint64_t total_bytes, uint32_t threads,
                                        pot_error **err);

/* Joins chunk-range records into the tensor digest that pot_tensor_digest
 * gives for the whole tensor. */
typedef struct pot_tensor_assembler pot_tensor_assembler;

POT_API pot_status pot_tensor_assembler_new(pot_tensor_assembler **out, const char *name,
                                            pot_dtype dtype, const uint64_t *shape, size_t shape_len,
                                            pot_error **err);
POT_API void pot_tensor_assembler_free(pot_tensor_assembler *assembler);
/* Adds a record. POT_E_MALFORMED when it does not decode; POT_E_INVALID_ARGUMENT
 * when it is for a tensor of another size or overlaps a record added. */
POT_API pot_status pot_tensor_assembler_add(pot_tensor_assembler *assembler,
                                            const uint8_t *record, size_t record_len, pot_error **err);
/* The tensor digest. POT_E_INVALID_ARGUMENT while bytes are not covered. */
POT_API pot_status pot_tensor_assembler_finish(pot_digest *out,
                                               const pot_tensor_assembler *assembler,
                                               pot_error **err);

/* ------------------------------------------------------------------------ */
/* safetensors state files                                                   */
/* ------------------------------------------------------------------------ */

/* A safetensors file mapped read-only, its header validated (sizes bounded,
 * offsets inside the file, no gaps or overlaps, byte lengths consistent with
 * dtype and shape, no duplicate keys). Tensors are indexed in bytewise name
 * order. Read-only: may be used from several threads at once. */
typedef struct pot_safetensors pot_safetensors;

/* POT_E_IO (cannot open/map), POT_E_MALFORMED (bad header), POT_E_LIMIT
 * (header over 100 MiB, too many tensors or dims), POT_E_UNSUPPORTED (dtype). */
POT_API pot_status pot_safetensors_open(pot_safetensors **out, const char *path, pot_error **err);
POT_API void pot_safetensors_free(pot_safetensors *file);
/* Number of tensors. 0 for NULL. */
POT_API size_t pot_safetensors_count(const pot_safetensors *file);
/* Describes tensor `index`. Every output may be NULL; the pointers stay
 * valid until pot_safetensors_free. POT_E_OUT_OF_RANGE for a bad index. */
POT_API pot_status pot_safetensors_tensor(const char **name, pot_dtype *dtype,
                                          const uint64_t **shape, size_t *shape_len,
                                          const void **data, size_t *data_len,
                                          const pot_safetensors *file, size_t index,
                                          pot_error **err);
/* Index of the named tensor; POT_E_NOT_FOUND when absent. */
POT_API pot_status pot_safetensors_find(size_t *index, const pot_safetensors *file,
                                        const char *name, pot_error **err);
/* Value of a __metadata__ entry, valid until pot_safetensors_free;
 * POT_E_NOT_FOUND when absent. */
POT_API pot_status pot_safetensors_metadata(const char **value, const pot_safetensors *file,
                                            const char *key, pot_error **err);
/* State digest of the file's tensors (metadata excluded), hashed straight
 * from the mapping: equal to a pot_state with the same tensors. */
POT_API pot_status pot_safetensors_digest(pot_digest *out, const pot_safetensors *file,
                                          uint32_t threads, pot_error **err);
/* Open, digest and close in one call. */
POT_API pot_status pot_safetensors_digest_file(pot_digest *out, const char *path,
                                               uint32_t threads, pot_error **err);

/* Collects tensors and writes a canonical safetensors file. The writer
 * BORROWS each tensor's data: it must stay valid and unchanged until
 * pot_safetensors_writer_write returns or the writer is freed. */
typedef struct pot_safetensors_writer pot_safetensors_writer;

POT_API pot_status pot_safetensors_writer_new(pot_safetensors_writer **out, pot_error **err);
POT_API void pot_safetensors_writer_free(pot_safetensors_writer *writer);
/* Validates (as pot_tensor_digest; POT_E_DUPLICATE for a repeated name) and
 * records the tensor. */
POT_API pot_status pot_safetensors_writer_add(pot_safetensors_writer *writer, const char *name,
                                              pot_dtype dtype, const uint64_t *shape, size_t shape_len,
                                              const void *data, size_t data_len, pot_error **err);
/* Sets a __metadata__ string entry (replacing an earlier value). */
POT_API pot_status pot_safetensors_writer_set_metadata(pot_safetensors_writer *writer,
                                                       const char *key, const char *value,
                                                       pot_error **err);
/* Writes the file through a temporary file and a rename, so path never holds
 * a partial file. POT_E_IO on failure. The writer may be written again. */
POT_API pot_status pot_safetensors_writer_write(const pot_safetensors_writer *writer,
                                                const char *path, pot_error **err);
/* The same canonical file as bytes in memory (what pot_safetensors_writer_write
 * would write), for a caller that writes or sends them itself: many small
 * files written without a sync each, a sample served over the network. */
POT_API pot_status pot_safetensors_writer_bytes(pot_bytes *out, const pot_safetensors_writer *writer,
                                                pot_error **err);

/* ------------------------------------------------------------------------ */
/* RFC 6962 Merkle trees                                                     */
/* ------------------------------------------------------------------------ */

/* SHA-256(0x00 || data). data may be NULL when data_len is 0. */
POT_API pot_status pot_merkle_leaf_hash(pot_digest *out, const void *data, size_t data_len,
                                        pot_error **err);
/* SHA-256(0x01 || left || right). */
POT_API pot_status pot_merkle_node_hash(pot_digest *out, const pot_digest *left,
                                        const pot_digest *right, pot_error **err);

/* Proofs are byte strings of concatenated 32-byte hashes in RFC 6962 order
 * (deepest first); at most 128 hashes (POT_E_LIMIT), a length that is not a
 * multiple of 32 is POT_E_MALFORMED.
 *
 * Returns POT_OK when leaf_hash is leaf `index` of the tree of `size` leaves
 * with the given root (RFC 9162 section 2.1.3.2); POT_E_OUT_OF_RANGE when
 * index >= size, POT_E_PROOF_LENGTH when the proof has the wrong number of
 * hashes for (index, size), POT_E_PROOF_MISMATCH when it does not lead to
 * root. Thread-safe. */
POT_API pot_status pot_merkle_verify_inclusion(uint64_t index, uint64_t size,
                                               const pot_digest *leaf_hash, const uint8_t *proof,
                                               size_t proof_len, const pot_digest *root,
                                               pot_error **err);
/* Returns POT_OK when the tree of size2 leaves with root2 extends the tree of
 * size1 leaves with root1 (RFC 9162 section 2.1.4.2). POT_E_OUT_OF_RANGE
 * when size1 == 0 or size1 > size2; POT_E_PROOF_LENGTH, POT_E_PROOF_MISMATCH
 * as above. Equal sizes need an empty proof and equal roots. Thread-safe. */
POT_API pot_status pot_merkle_verify_consistency(uint64_t size1, uint64_t size2,
                                                 const pot_digest *root1, const pot_digest *root2,
                                                 const uint8_t *proof, size_t proof_len,
                                                 pot_error **err);

/* The trainer-side log: appends leaves and gives the root at any size in
 * O(log n) memory (it keeps only the tree's right border). */
typedef struct pot_log pot_log;

POT_API pot_status pot_log_new(pot_log **out, pot_error **err);
POT_API void pot_log_free(pot_log *log);
/* Appends a leaf whose hash is SHA-256(0x00 || data). */
POT_API pot_status pot_log_append(pot_log *log, const void *data, size_t data_len, pot_error **err);
/* Appends a leaf given by its leaf hash. */
POT_API pot_status pot_log_append_hash(pot_log *log, const pot_digest *leaf_hash,
                                       pot_error **err);
/* Number of leaves. 0 for NULL. */
POT_API uint64_t pot_log_size(const pot_log *log);
/* Root of the leaves appended so far (SHA-256 of nothing when empty). */
POT_API pot_status pot_log_root(pot_digest *out, const pot_log *log, pot_error **err);
/* Serialises the log (u64le size, then its border hashes) to resume later. */
POT_API pot_status pot_log_save(pot_bytes *out, const pot_log *log, pot_error **err);
/* Restores a saved log; POT_E_MALFORMED unless the bytes are exactly what
 * pot_log_save produces for some size. */
POT_API pot_status pot_log_load(pot_log **out, const uint8_t *data, size_t data_len, pot_error **err);

/* The prover-side tree: stores every node (in a file, or in memory) and
 * serves the root, leaf hashes, inclusion and consistency proofs for any
 * earlier size. Reads (root, leaf hash, proofs) may run on several threads at
 * once; append and flush need exclusive access. */
typedef struct pot_tree pot_tree;

/* Opens the tree file at path, creating it when missing; path NULL keeps the
 * tree in memory. POT_E_IO, or POT_E_MALFORMED for a file that is not a tree
 * file or whose last append was interrupted. */
POT_API pot_status pot_tree_open(pot_tree **out, const char *path, pot_error **err);
/* Flushes (errors are lost: call pot_tree_flush first to see them) and frees. */
POT_API void pot_tree_free(pot_tree *tree);
/* Appends a leaf (hash SHA-256(0x00 || data)); *index (may be NULL)
 * receives its index. */
POT_API pot_status pot_tree_append(uint64_t *index, pot_tree *tree, const void *data, size_t data_len,
                                   pot_error **err);
POT_API pot_status pot_tree_append_hash(uint64_t *index, pot_tree *tree,
                                        const pot_digest *leaf_hash, pot_error **err);
/* Writes buffered appends to the file. */
POT_API pot_status pot_tree_flush(pot_tree *tree, pot_error **err);
/* Number of leaves. 0 for NULL. */
POT_API uint64_t pot_tree_size(const pot_tree *tree);
/* Root of the first `size` leaves; POT_E_OUT_OF_RANGE when size > pot_tree_size. */
POT_API pot_status pot_tree_root(pot_digest *out, const pot_tree *tree, uint64_t size,
                                 pot_error **err);
POT_API pot_status pot_tree_leaf_hash(pot_digest *out, const pot_tree *tree, uint64_t index,
                                      pot_error **err);
/* Inclusion proof of leaf `index` in the tree of its first `size` leaves;
 * POT_E_OUT_OF_RANGE unless index < size <= pot_tree_size. */
POT_API pot_status pot_tree_inclusion_proof(pot_bytes *out, const pot_tree *tree, uint64_t index,
                                            uint64_t size, pot_error **err);
/* Consistency proof from size1 to size2 leaves; POT_E_OUT_OF_RANGE unless
 * 0 < size1 <= size2 <= pot_tree_size. */
POT_API pot_status pot_tree_consistency_proof(pot_bytes *out, const pot_tree *tree,
                                              uint64_t size1, uint64_t size2, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Protocol: seeds, step leaves, challenges, security arithmetic             */
/* ------------------------------------------------------------------------ */

#define POT_STEP_LEAF_SIZE 132
#define POT_MAX_CHALLENGE_ROUNDS 65536
#define POT_MAX_BEACON_BYTES 1024

/* POT_STEP_LEAF_SIZE, POT_MAX_CHALLENGE_ROUNDS, POT_MAX_BEACON_BYTES. */
POT_API size_t pot_step_leaf_size(void);
POT_API uint64_t pot_max_challenge_rounds(void);
POT_API size_t pot_max_beacon_bytes(void);

/* Seed of step `step` of run `run_id` under the per_step seed policy: the
 * first 8 bytes (little-endian) of a tagged SHA-256 of (base_seed, run_id,
 * step), docs/PROTOCOL.md section 9. Two runs of one task draw different
 * random numbers. Thread-safe. */
POT_API pot_status pot_seed_derive(uint64_t *out, uint64_t base_seed, const pot_digest *run_id, uint64_t step,
                                   pot_error **err);

/* The leaf data the checkpoint log holds for step `step` (from 1) of run
 * `run_id`: the tag, the run, the step, the digest of the state after it,
 * the digest of that state's statistics table (section 5.2,
 * pot_state_stats_digest), the loss and the update norm (section 13 over
 * "param/" from S_{t-1} to S_t, as pot_update_norm computes it) as IEEE-754
 * binary64 bits, docs/PROTOCOL.md section 10. Append it with pot_log_append /
 * pot_tree_append (leaf index step - 1). POT_E_INVALID_ARGUMENT for step 0
 * or an update norm with its sign bit set. (0.3.0: the stats digest is new,
 * the leaf 132 bytes.) */
POT_API pot_status pot_step_leaf_encode(uint8_t out[POT_STEP_LEAF_SIZE], const pot_digest *run_id,
                                        uint64_t step, const pot_digest *state_digest,
                                        const pot_digest *stats_digest, double loss, double update_norm,
                                        pot_error **err);
/* Parses step leaf data; POT_E_MALFORMED unless it is exactly what
 * pot_step_leaf_encode produces (a version-1 or version-2 leaf is refused
 * naming its version). Each output may be NULL. */
POT_API pot_status pot_step_leaf_decode(pot_digest *run_id, uint64_t *step, pot_digest *state_digest,
                                        pot_digest *stats_digest, double *loss, double *update_norm,
                                        const uint8_t *leaf, size_t leaf_len, pot_error **err);

/* Writes steps_len distinct challenged steps (each in 1..num_steps, uniform,
 * without modulo bias) derived from the beacon value and the run id into
 * steps[0..steps_len). POT_E_INVALID_ARGUMENT when num_steps is 0, steps_len >
 * num_steps or the beacon is empty; POT_E_LIMIT past
 * POT_MAX_CHALLENGE_ROUNDS rounds or POT_MAX_BEACON_BYTES. Thread-safe. */
POT_API pot_status pot_challenge_derive(uint64_t *steps, size_t steps_len, const uint8_t *beacon,
                                        size_t beacon_len, const pot_digest *run_id,
                                        uint64_t num_steps, pot_error **err);

/* Probability that `challenges` distinct challenges over `steps` steps hit
 * at least one of `forged` forged steps: 1 - C(n-m, k) / C(n, k). */
POT_API pot_status pot_security_detection_probability(double *out, uint64_t steps,
                                                      uint64_t forged, uint64_t challenges,
                                                      pot_error **err);
/* Smallest number of challenges whose detection probability reaches
 * target (0 < target < 1, forged > 0). POT_E_LIMIT when more than
 * POT_MAX_CHALLENGE_ROUNDS would be needed. */
POT_API pot_status pot_security_challenges_needed(uint64_t *out, uint64_t steps, uint64_t forged,
                                                  double target, pot_error **err);
/* (since 0.3.0) The least bond B with p * B >= (1 - p) * reward, p the
 * detection probability per run (docs/PROTOCOL.md section 12.2): a miner
 * that forges and gains at most the reward when undetected, and loses the
 * bond when detected, gains nothing in expectation. Exact for the double
 * given. POT_E_INVALID_ARGUMENT unless 0 < p <= 1 (no bond deters at
 * p = 0); POT_E_OUT_OF_RANGE when the bond would pass 2^64 - 1. */
POT_API pot_status pot_security_bond(uint64_t *out, uint64_t reward, double detection_probability,
                                     pot_error **err);

/* ------------------------------------------------------------------------ */
/* The execution spec                                                        */
/* ------------------------------------------------------------------------ */

/* A validated execution spec (docs/PROTOCOL.md section 14). Immutable:
 * may be read from several threads at once. */
typedef struct pot_spec pot_spec;

typedef enum pot_seed_policy {
  POT_SEED_PER_STEP = 1,
  POT_SEED_SINGLE_SEED = 2,
  POT_SEED_NONE = 3,
  POT_SEED_POLICY_MAX_ENUM_ = 0x7FFFFFFF
} pot_seed_policy;

/* Parses the JSON form (docs/cli.md) and validates it. POT_E_INVALID_ARGUMENT
 * names the first rule broken or the bad key; POT_E_MALFORMED for text that
 * is not JSON; POT_E_LIMIT past POT_MAX_JSON_BYTES. */
POT_API pot_status pot_spec_from_json(pot_spec **out, const char *json, pot_error **err);
/* Decodes canonical bytes: POT_E_MALFORMED unless they are exactly the
 * canonical encoding, POT_E_INVALID_ARGUMENT when a rule is broken,
 * POT_E_LIMIT past 65536 bytes. */
POT_API pot_status pot_spec_decode(pot_spec **out, const uint8_t *data, size_t data_len, pot_error **err);
POT_API void pot_spec_free(pot_spec *spec);
/* The canonical bytes (a pot.v2.ExecutionSpec message). */
POT_API pot_status pot_spec_encode(pot_bytes *out, const pot_spec *spec, pot_error **err);
/* The JSON form; out->data is also NUL-terminated (len excludes the NUL). */
POT_API pot_status pot_spec_to_json(pot_bytes *out, const pot_spec *spec, pot_error **err);
/* tagged("pot/v2/spec", canonical bytes). */
POT_API pot_status pot_spec_digest(pot_digest *out, const pot_spec *spec, pot_error **err);
/* The seed policy and its seed (the base seed for POT_SEED_PER_STEP, 0 for
 * POT_SEED_NONE); either output may be NULL. */
POT_API pot_status pot_spec_seed_policy(pot_seed_policy *policy, uint64_t *seed, const pot_spec *spec,
                                        pot_error **err);
/* Pinned intra-op thread count; 0 for NULL. */
POT_API uint32_t pot_spec_intra_op_threads(const pot_spec *spec);
/* Norm-bucket resolution (buckets per doubling); 0 for NULL. */
POT_API uint32_t pot_spec_norm_bucket_resolution(const pot_spec *spec);
/* The learning rates of training steps first..first+out_len-1 (first >= 1,
 * the last at most 2^32; POT_E_OUT_OF_RANGE past it) into out[0..out_len-1]: the optimizer's lr through the spec's lr_schedule, as torch
 * 1.13's schedulers give param_groups[0]["lr"] before each optimizer step
 * (docs/PROTOCOL.md 14.3), bit for bit. S_t's hparam/lr must be the rate of
 * step t+1. Costs O(first + out_len) arithmetic: fetch a run's rates in chunks,
 * not one call per step. POT_E_INVALID_ARGUMENT for first = 0 or a rate that
 * is not finite, POT_E_LIMIT for out_len above POT_MAX_RATES_PER_CALL (so that a
 * binding allocating out for the caller never allocates more than 128 MiB). */
#define POT_MAX_RATES_PER_CALL 16777216 /* 2^24 */
POT_API pot_status pot_spec_learning_rates(double *out, size_t out_len, const pot_spec *spec, uint64_t first,
                                           pot_error **err);
/* The spec's parameter groups (docs/PROTOCOL.md 14.5): 1 + its param_groups;
 * 0 for NULL. */
POT_API uint32_t pot_spec_group_count(const pot_spec *spec);
/* As pot_spec_learning_rates, for parameter group `group`: its optimizer's
 * lr through the one lr_schedule (group 0 gives pot_spec_learning_rates'
 * rates; S_t holds group g's rate of step t+1 as hparam/lr/<g>).
 * POT_E_OUT_OF_RANGE for a group >= pot_spec_group_count. */
POT_API pot_status pot_spec_group_learning_rates(double *out, size_t out_len, const pot_spec *spec, uint32_t group,
                                                 uint64_t first, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Commitments: dataset, schedule, training                                  */
/* ------------------------------------------------------------------------ */

/* Digest of one dataset sample given as safetensors bytes (a small set of
 * named tensors; docs/PROTOCOL.md section 15). The dataset root is the RFC
 * 6962 root over sample digests: append each 32-byte digest as leaf data
 * (pot_tree_append) in dataset order. POT_E_MALFORMED for bytes that are not
 * safetensors or hold no tensor, POT_E_LIMIT past 64 MiB. */
POT_API pot_status pot_sample_digest(pot_digest *out, const uint8_t *safetensors, size_t safetensors_len,
                                     pot_error **err);

/* Schedule entry of step `step` (from 1): indices_len dataset indices split
 * into microbatch_sizes_len consecutive micro-batches of the given sizes
 * (which must sum to indices_len). The leaf data of the schedule tree (leaf index step - 1).
 * POT_E_OUT_OF_RANGE for an index >= dataset_size (pass 0 to skip that
 * check). */
POT_API pot_status pot_schedule_entry_encode(pot_bytes *out, uint64_t step, const uint64_t *indices,
                                             size_t indices_len, const uint32_t *microbatch_sizes,
                                             size_t microbatch_sizes_len, uint64_t dataset_size,
                                             pot_error **err);
/* Parses an entry. *indices_len and *microbatch_sizes_len are in/out: the capacity of
 * `indices` and `microbatch_sizes` on entry, the numbers used on return.
 * With indices or microbatch_sizes NULL only the numbers are returned.
 * POT_E_INVALID_ARGUMENT when a capacity is too small (the numbers needed
 * are still returned), POT_E_MALFORMED for bytes that are not a canonical
 * entry. */
POT_API pot_status pot_schedule_entry_decode(uint64_t *step, uint64_t *indices, size_t *indices_len,
                                             uint32_t *microbatch_sizes, size_t *microbatch_sizes_len,
                                             const uint8_t *entry, size_t entry_len, pot_error **err);
/* Entry `step` of the seeded schedule (epoch-wise permutations of the
 * dataset from `seed`, docs/PROTOCOL.md section 16.2); batch_size must be a
 * multiple of microbatches. */
POT_API pot_status pot_seeded_schedule_entry(pot_bytes *out, uint64_t seed, uint64_t dataset_size,
                                             uint32_t batch_size, uint32_t microbatches,
                                             uint64_t step, pot_error **err);
/* Root of the seeded schedule's first `steps` entries. */
POT_API pot_status pot_seeded_schedule_root(pot_digest *out, uint64_t seed, uint64_t dataset_size,
                                            uint32_t batch_size, uint32_t microbatches,
                                            uint64_t steps, pot_error **err);
/* Positions first .. first + out_len - 1 of the seeded schedule's index
 * stream perm_0 || perm_1 || ... (docs/PROTOCOL.md 16.2): step t's entry
 * holds positions (t-1)*B .. t*B - 1, micro-batch j the j-th B/M of them.
 * A call costs about out_len + dataset_size draws (every epoch it touches is
 * permuted whole), so a whole schedule in one call costs what its root
 * does, where one pot_seeded_schedule_entry per step would permute an epoch
 * per step. POT_E_LIMIT past
 * POT_MAX_STREAM_POSITIONS; out is untouched on error. */
#define POT_MAX_STREAM_POSITIONS 16777216 /* 2^24 */
POT_API pot_status pot_seeded_schedule_stream(uint64_t *out, size_t out_len, uint64_t seed, uint64_t dataset_size,
                                              uint64_t first, pot_error **err);
/* Positions first .. first + out_len - 1 of the uniform schedule's index
 * stream (docs/PROTOCOL.md 16.3): each position an index drawn uniformly
 * from [0, dataset_size) on its own (with replacement; any dataset size >=
 * 1), steps and micro-batches taken as in pot_seeded_schedule_stream. A
 * call costs out_len draws. POT_E_LIMIT past POT_MAX_STREAM_POSITIONS,
 * POT_E_INVALID_ARGUMENT for an empty dataset; out is untouched on error. */
POT_API pot_status pot_uniform_schedule_stream(uint64_t *out, size_t out_len, uint64_t seed, uint64_t dataset_size,
                                               uint64_t first, pot_error **err);

/* A validated training commitment (docs/PROTOCOL.md section 17). Immutable. */
typedef struct pot_commitment pot_commitment;

/* From the JSON form (docs/cli.md); POT_E_INVALID_ARGUMENT names the rule,
 * POT_E_MALFORMED for text that is not JSON, POT_E_LIMIT past
 * POT_MAX_JSON_BYTES. */
POT_API pot_status pot_commitment_from_json(pot_commitment **out, const char *json, pot_error **err);
/* From canonical bytes; POT_E_MALFORMED unless canonical, POT_E_LIMIT past
 * 1024 bytes. */
POT_API pot_status pot_commitment_decode(pot_commitment **out, const uint8_t *data, size_t data_len,
                                         pot_error **err);
POT_API void pot_commitment_free(pot_commitment *commitment);
POT_API pot_status pot_commitment_encode(pot_bytes *out, const pot_commitment *commitment,
                                         pot_error **err);
/* JSON form; out->data is also NUL-terminated. */
POT_API pot_status pot_commitment_to_json(pot_bytes *out, const pot_commitment *commitment,
                                          pot_error **err);
/* The run id: tagged("pot/v2/run", canonical bytes). */
POT_API pot_status pot_commitment_run_id(pot_digest *out, const pot_commitment *commitment,
                                         pot_error **err);
/* The committed digests (each output may be NULL). */
POT_API pot_status pot_commitment_digests(pot_digest *initial_state, pot_digest *schedule_root,
                                          pot_digest *dataset_root, pot_digest *spec_digest,
                                          const pot_commitment *commitment, pot_error **err);
/* Declared steps (= schedule entries) and dataset size; 0 for NULL. */
POT_API uint64_t pot_commitment_declared_steps(const pot_commitment *commitment);
POT_API uint64_t pot_commitment_dataset_size(const pot_commitment *commitment);
/* The id of the task the commitment answers to. */
POT_API pot_status pot_commitment_task_id(pot_digest *out, const pot_commitment *commitment, pot_error **err);
/* The flagged steps the run sealed with on the ledger (docs/ledger.md 2.3,
 * run_info's "flagged_steps"): pot_opening_verify and pot_verify_step then
 * fail an opening that lists other steps (check 32), so a flagged step
 * hidden from the ledger, which would not be challenged for certain, is a
 * FAIL of every challenge of the run. Without it the list is checked against
 * the run's tables only. Ascending within 1..declared_steps
 * (POT_E_INVALID_ARGUMENT); an empty list is a run sealed with none. Not
 * while the commitment is used by another thread. Since 0.3.0. */
POT_API pot_status pot_commitment_set_sealed_flags(pot_commitment *commitment, const uint64_t *flagged_steps,
                                                   size_t flagged_steps_len, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Tasks                                                                     */
/* ------------------------------------------------------------------------ */

/* A validated task (docs/PROTOCOL.md section 17.1): what a task owner fixes
 * before anyone trains (spec and model program, dataset, S_0, schedule,
 * step bounds, challenge policy). Immutable. */
typedef struct pot_task pot_task;

/* From the JSON form (docs/cli.md "Task"); POT_E_INVALID_ARGUMENT names the
 * rule or key, POT_E_UNSUPPORTED another protocol_version, POT_E_MALFORMED
 * text that is not JSON, POT_E_LIMIT past POT_MAX_JSON_BYTES. */
POT_API pot_status pot_task_from_json(pot_task **out, const char *json, pot_error **err);
/* From canonical pot.v2.Task bytes; POT_E_UNSUPPORTED for another protocol
 * version, POT_E_MALFORMED unless canonical, POT_E_LIMIT past 73728 bytes. */
POT_API pot_status pot_task_decode(pot_task **out, const uint8_t *data, size_t data_len, pot_error **err);
POT_API void pot_task_free(pot_task *task);
POT_API pot_status pot_task_encode(pot_bytes *out, const pot_task *task, pot_error **err);
/* JSON form; out->data is also NUL-terminated. */
POT_API pot_status pot_task_to_json(pot_bytes *out, const pot_task *task, pot_error **err);
/* The task id: tagged("pot/v2/task", canonical bytes). */
POT_API pot_status pot_task_id(pot_digest *out, const pot_task *task, pot_error **err);
/* A new handle holding the task's execution spec (free with pot_spec_free). */
POT_API pot_status pot_task_spec(pot_spec **out, const pot_task *task, pot_error **err);
/* POT_OK when the task admits the commitment. Otherwise POT_E_OUT_OF_RANGE
 * for declared_steps outside the task's bounds (checked first), or
 * POT_E_INVALID_ARGUMENT naming the first field that differs from what the
 * task fixes (task_id, initial_state_digest, schedule_root, dataset_root,
 * dataset_size, spec_digest; under a run-seeded task the schedule root is
 * recomputed for the commitment's miner and step count). The ledger's
 * start_training_commitment runs this check. */
POT_API pot_status pot_task_check_commitment(const pot_task *task, const pot_commitment *commitment,
                                             pot_error **err);
/* The task's schedule rule (docs/PROTOCOL.md 17.1 field 7): one listed
 * schedule every run follows, or each run's own seeded schedule (17.3). */
typedef enum pot_schedule_rule {
  POT_SCHEDULE_LISTED = 1,
  POT_SCHEDULE_RUN_SEEDED = 2,
  POT_SCHEDULE_RUN_SEEDED_UNIFORM = 3 /* each run's own uniform schedule (16.3) */
} pot_schedule_rule;
POT_API pot_status pot_task_schedule_rule(pot_schedule_rule *out, const pot_task *task, pot_error **err);
/* Under a run-seeded task, the seed of the run's schedule (17.3):
 * pot_seeded_schedule_entry(seed, dataset_size, spec batch_size, spec
 * grad_accum_microbatches, t) is the entry of step t (under
 * run_seeded_uniform, positions of pot_uniform_schedule_stream). POT_E_INVALID_ARGUMENT
 * for a listed task or an identity outside 1..256 bytes, POT_E_OUT_OF_RANGE
 * for declared_steps outside the task's bounds. */
POT_API pot_status pot_task_run_schedule_seed(uint64_t *out, const pot_task *task, const uint8_t *miner_identity,
                                              size_t miner_identity_len, uint64_t declared_steps,
                                              pot_error **err);
/* The training commitment of `miner_identity` for `declared_steps` steps of
 * the task: every other field is the task's (under a run-seeded task the
 * schedule root is the run's own, recomputed: up to 2^24 index draws).
 * Errors as pot_task_check_commitment and pot_commitment_from_json. */
POT_API pot_status pot_task_commitment(pot_commitment **out, const pot_task *task, const uint8_t *miner_identity,
                                       size_t miner_identity_len, uint64_t declared_steps, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Token-stream datasets                                                     */
/* ------------------------------------------------------------------------ */

/* A validated stream dataset (docs/PROTOCOL.md 15.1): token files (shards)
 * committed over 4096-byte chunks, sample i the i-th window of W tokens.
 * Immutable. */
typedef struct pot_stream pot_stream;

/* From the JSON form (docs/cli.md "Stream dataset"): {"token_dtype": "U16",
 * "output_dtype": "I64", "window": W, "views": [{"name", "start",
 * "length"}...], "shards": [{"tokens", "root"}...]}. POT_E_INVALID_ARGUMENT
 * names the rule or key, POT_E_LIMIT a bound, POT_E_MALFORMED text that is
 * not JSON. */
POT_API pot_status pot_stream_from_json(pot_stream **out, const char *json, pot_error **err);
/* From the descriptor bytes of 15.1; POT_E_UNSUPPORTED for another version,
 * POT_E_MALFORMED for a truncated record or a trailing byte. */
POT_API pot_status pot_stream_decode(pot_stream **out, const uint8_t *data, size_t data_len, pot_error **err);
POT_API void pot_stream_free(pot_stream *stream);
POT_API pot_status pot_stream_encode(pot_bytes *out, const pot_stream *stream, pot_error **err);
/* JSON form; out->data is also NUL-terminated. */
POT_API pot_status pot_stream_to_json(pot_bytes *out, const pot_stream *stream, pot_error **err);
/* dataset_root = tagged("pot/v2/stream", descriptor): what a task's and a
 * commitment's dataset_root hold for this dataset. */
POT_API pot_status pot_stream_root(pot_digest *out, const pot_stream *stream, pot_error **err);
/* The number of windows, the dataset_size; 0 for NULL. */
POT_API uint64_t pot_stream_size(const pot_stream *stream);
/* The shard root and token count of a token file of token_dtype (U16 or
 * U32), read once (POT_E_IO when it cannot be read, POT_E_INVALID_ARGUMENT
 * when empty or not whole tokens). */
POT_API pot_status pot_stream_shard_root_file(pot_digest *root, uint64_t *tokens, const char *path,
                                              pot_dtype token_dtype, pot_error **err);
/* The proof of window `index` (15.1), read from its shard's file (the shard
 * pot_stream_locate names). POT_E_OUT_OF_RANGE past the size,
 * POT_E_INVALID_ARGUMENT when the file is not the shard's size. */
POT_API pot_status pot_stream_prove_window(pot_bytes *proof, const pot_stream *stream, uint64_t index,
                                           const char *shard_path, pot_error **err);
/* The shard and first token of window `index`. */
POT_API pot_status pot_stream_locate(uint32_t *shard, uint64_t *offset, const pot_stream *stream, uint64_t index,
                                     pot_error **err);
/* Checks a window proof and gives the window's sample: its views as
 * tensors, canonical safetensors bytes. POT_E_PROOF_LENGTH when the proof's
 * sizes are not those the dataset and index imply, POT_E_PROOF_MISMATCH when
 * its chunks do not give the shard's root. */
POT_API pot_status pot_stream_check_window(pot_bytes *sample, const pot_stream *stream, uint64_t index,
                                           const uint8_t *proof, size_t proof_len, pot_error **err);
/* The sample of window `index` read from its shard's file: what a trainer
 * feeds the model (reads W tokens; POT_E_INVALID_ARGUMENT when the file is
 * not the shard's size). The bytes are not checked against the shard root
 * here: the opening's window proof binds them. */
POT_API pot_status pot_stream_sample(pot_bytes *sample, const pot_stream *stream, uint64_t index,
                                     const char *shard_path, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Openings of challenged steps                                              */
/* ------------------------------------------------------------------------ */

/* An opening manifest being built by the miner (docs/PROTOCOL.md section
 * 18). States are not part of it: name the served safetensors files with
 * pot_opening_set_state_refs. */
typedef struct pot_opening pot_opening;

/* The checks of pot_opening_verify, in the order they run. Frozen values. */
typedef enum pot_opening_check {
  POT_CHECK_OK = 0,
  POT_CHECK_MANIFEST = 1,
  POT_CHECK_RUN_ID = 2,
  POT_CHECK_STEP = 3,
  POT_CHECK_LOG_SIZE = 4,
  POT_CHECK_POST_LEAF = 5,
  POT_CHECK_POST_LEAF_PROOF = 6,
  POT_CHECK_PRE_STATE_COMMITTED = 7,
  POT_CHECK_PRE_LEAF = 8,
  POT_CHECK_PRE_LEAF_PROOF = 9,
  POT_CHECK_SCHEDULE_ENTRY = 10,
  POT_CHECK_SCHEDULE_PROOF = 11,
  POT_CHECK_SAMPLE_COUNT = 12,
  POT_CHECK_SAMPLE_INDEX = 13,
  POT_CHECK_SAMPLE_PAYLOAD = 14,
  POT_CHECK_SAMPLE_PROOF = 15,
  POT_CHECK_PRE_STATE_DIGEST = 16,
  POT_CHECK_POST_STATE_DIGEST = 17,
  /* pot_verify_step only, after the checks above: */
  POT_CHECK_SPEC = 18,            /* the spec is not the commitment's */
  POT_CHECK_PROGRAM = 19,         /* the model program is not the spec's */
  POT_CHECK_REPLAY = 20,          /* the step could not be replayed (the message says why) */
  POT_CHECK_REPLAYED_STATE = 21,  /* bitwise: replayed S_t differs from leaf t's state */
  POT_CHECK_REPLAYED_LOSS = 22,   /* replayed loss differs from leaf t's: bitwise, in any bit; NORM_BUCKET
                                   * (since 0.3.0), by more than a relative 1e-2 (section 21.5) */
  POT_CHECK_REPLAYED_BUCKET = 23, /* norm bucket: replayed update's bucket does not match */
  /* After check 17 (and, in pot_verify_step, during and after the replay):
   * a NaN or infinity in leaf t's loss, a served state, a gradient, the
   * replayed loss or the replayed S_t. */
  POT_CHECK_NONFINITE = 24,
  /* pot_verify_step, before the replay: hparam/lr of the served S_{t-1}
   * (and, cross-architecture, of the served S_t) is not the rate the spec's
   * schedule gives step t (t+1). */
  POT_CHECK_LEARNING_RATE = 25,
  /* Leaf t's update norm is not, bit for bit, the norm (section 13, over
   * "param/") from S_{t-1} to S_t: the served S_t, checked after check 28
   * when it is served, else (pot_verify_step, bitwise) the replayed S_t,
   * after check 22. */
  POT_CHECK_COMMITTED_NORM = 26,
  /* pot_verify_step, after check 26 (bitwise) or 23 (norm bucket): the
   * replayed S_t does not depend on the step's gradient. The replay applies
   * the update a second time with a zero gradient; at a learning rate above
   * 0, a step that moved a parameter or keeps optimizer state fails when no
   * element of S_t (parameters or optimizer state) differs from that
   * zero-gradient update (section 21.5). Saturated optimizer state fails
   * here. */
  POT_CHECK_GRADIENT_IGNORED = 27,
  /* After check 24 (since 0.3.0): a served state (S_{t-1}, and S_t when it
   * is served) holds more subnormal BF16, F32 or F64 values than one in
   * 4096 of its "param/" elements or one in 16 of its other elements
   * (section 18). Such a state is one honest training does not reach, and
   * its replay would cost a verifier many honest steps; it is refused
   * before any replay reads it. */
  POT_CHECK_SUBNORMAL = 28,
  /* pot_verify_step, NORM_BUCKET, after check 22 (since 0.3.0): the served
   * S_t's update (S_t - S_{t-1} over "param/") is not the replayed one
   * within the tolerances of section 21.5: its relative distance from the
   * replayed update above 0.5 (0.8 with F16 or BF16 parameters), or one
   * F32 or F64 tensor's (of at least 64 elements) above 0.5. A verifier on other hardware compares the work,
   * not only the norm's bucket. */
  POT_CHECK_REPLAYED_UPDATE = 29,
  /* pot_verify_step, last (since 0.3.0): the task's program, not the
   * miner's work, decides the step (section 21.5): replayed on another
   * thread count than the spec's it fails check 23, 22 or 29 and verifies on
   * the spec's; or the spec declares randomness under the per_step seed
   * policy and the step replays to the same S_t under another run's seeds
   * (the program draws and discards: every run of a listed task would be one
   * trajectory). The task's fault: the ledger never counts it against the
   * miner. */
  POT_CHECK_TASK_PROGRAM = 30,
  /* (since 0.3.0) A state's statistics table (section 5.2) is not the one
   * its leaf commits: the served S_{t-1} against leaf t-1 and the served
   * S_t against leaf t (pot_opening_verify), the replayed S_t against leaf
   * t (pot_verify_step, bitwise). The flags of a step (5.3) are the miner's
   * commitment. */
  POT_CHECK_STATE_STATS = 31,
  /* Since 0.3.0, after check 9 (section 18): the manifest's run record (every
   * leaf of the posted log, the statistics table of every state they
   * commit, the steps those tables flag) is not the posted log's, lists
   * other flagged steps than the tables give, or, when the commitment
   * carries the flagged steps its run sealed with on the ledger
   * (pot_commitment_set_sealed_flags), other steps than those.
   * POT_E_UNSUPPORTED for a manifest of 0.2 (no run record). */
  POT_CHECK_RUN_FLAGS = 32,
  POT_CHECK_MAX_ENUM_ = 0x7FFFFFFF
} pot_opening_check;

/* Starts a manifest for step `step` of run `run_id`, whose leaf proofs are
 * made against the posted log root of `log_size` leaves, with the digest of
 * the state before the step. */
POT_API pot_status pot_opening_new(pot_opening **out, const pot_digest *run_id, uint64_t step,
                                   uint64_t log_size, const pot_digest *pre_state_digest,
                                   pot_error **err);
POT_API void pot_opening_free(pot_opening *opening);
/* Leaf t-1 and its inclusion proof (not for step 1). */
POT_API pot_status pot_opening_set_pre_leaf(pot_opening *opening, const uint8_t *leaf, size_t leaf_len,
                                            const uint8_t *proof, size_t proof_len, pot_error **err);
/* Leaf t and its inclusion proof. */
POT_API pot_status pot_opening_set_post_leaf(pot_opening *opening, const uint8_t *leaf, size_t leaf_len,
                                             const uint8_t *proof, size_t proof_len, pot_error **err);
/* Schedule entry of step t and its inclusion proof in the schedule root. */
POT_API pot_status pot_opening_set_schedule(pot_opening *opening, const uint8_t *entry, size_t entry_len,
                                            const uint8_t *proof, size_t proof_len, pot_error **err);
/* Appends the next sample of the batch: its dataset index, its safetensors
 * bytes and its inclusion proof in the dataset root. Copies the bytes. */
POT_API pot_status pot_opening_add_sample(pot_opening *opening, uint64_t index, const uint8_t *payload,
                                          size_t payload_len, const uint8_t *proof, size_t proof_len,
                                          pot_error **err);
/* Token-stream datasets (docs/PROTOCOL.md 15.1, 18): the descriptor the
 * windows are proven against (pot_stream_encode's bytes; tagged it must be
 * the committed dataset root). Copies the bytes. */
POT_API pot_status pot_opening_set_stream(pot_opening *opening, const uint8_t *descriptor, size_t descriptor_len,
                                          pot_error **err);
/* Appends the next sample of the batch of a stream dataset: its window
 * index and window proof (pot_stream_prove_window). Copies the bytes. */
POT_API pot_status pot_opening_add_window(pot_opening *opening, uint64_t index, const uint8_t *proof,
                                          size_t proof_len, pot_error **err);
/* Where the state files are served (paths or URIs; NULL or "" for none). */
POT_API pot_status pot_opening_set_state_refs(pot_opening *opening, const char *pre_state_ref,
                                              const char *post_state_ref, pot_error **err);
/* Canonical manifest bytes (a pot.v2.OpeningManifest). POT_E_LIMIT past
 * 256 MiB. */
/* The run record every opening serves since 0.3.0 (section 18, fields
 * 16-18; check 32): the log_size step leaves concatenated (132 bytes each,
 * steps 1..log_size), the statistics table of each of S_1..S_{log_size}, and
 * the steps the tables flag, ascending (pot_run_flags). Copied. */
POT_API pot_status pot_opening_set_run_record(pot_opening *opening, const uint8_t *leaves, size_t leaves_len,
                                              const uint8_t *const *tables, const size_t *tables_lens,
                                              size_t tables_len, const uint64_t *flagged_steps,
                                              size_t flagged_steps_len, pot_error **err);
POT_API pot_status pot_opening_encode(pot_bytes *out, const pot_opening *opening, pot_error **err);
/* tagged("pot/v3/opening", canonical bytes): what the ledger records. */
POT_API pot_status pot_opening_digest(pot_digest *out, const pot_opening *opening, pot_error **err);

/* Stable lower-case name of a check ("post_leaf_proof"), or "unknown". */
POT_API const char *pot_opening_check_name(pot_opening_check check);
/* Verifies manifest bytes as the opening of `challenged_step` (a valid
 * opening of another step fails POT_CHECK_STEP) against the commitment and
 * the posted log root of log_size leaves, and, when the paths are not NULL, the served state files
 * (digested as they stream). Everything but the replay itself is checked.
 * Returns POT_OK with *check = POT_CHECK_OK when every check passes;
 * otherwise the status of the first failed check (POT_E_PROOF_MISMATCH,
 * POT_E_MALFORMED, POT_E_IO, ...), an error naming it, and, unlike other
 * outputs, *check set to that check. Thread-safe. */
POT_API pot_status pot_opening_verify(pot_opening_check *check, const pot_commitment *commitment,
                                      uint64_t challenged_step, uint64_t log_size,
                                      const pot_digest *log_root,
                                      const uint8_t *manifest, size_t manifest_len,
                                      const char *pre_state_path, const char *post_state_path,
                                      uint32_t threads, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Witnesses: commit, reveal, verdict                                        */
/* ------------------------------------------------------------------------ */

#define POT_WITNESS_SALT_SIZE 32

/* POT_WITNESS_SALT_SIZE fresh bytes from OpenSSL's CSPRNG. */
POT_API pot_status pot_witness_salt(uint8_t out[POT_WITNESS_SALT_SIZE], pot_error **err);
/* The commitment a committee member posts before revealing (docs/PROTOCOL.md
 * section 19): tagged("pot/v2/witness", ...) of its statement, salt (16..64
 * bytes) and identity (1..256 bytes). statement_json is a JSON object: the
 * challenge it answers ("run_id" hex, "step", "challenge_id", "mode":
 * "bitwise" or "norm_bucket"), the "environment" it verified in
 * {"framework_version", "intra_op_threads", "hardware_class"}, and "kind":
 * "replayed" (with "replayed_state" hex and "bucket"), "unavailable" (no
 * opening reached it) or "invalid_opening" (with "check", a
 * pot_opening_check_name other than replayed_state and replayed_bucket,
 * which a replayed value states). POT_E_INVALID_ARGUMENT naming the key
 * for a statement outside these rules, POT_E_MALFORMED for text that is
 * not JSON. Thread-safe. */
POT_API pot_status pot_witness_commitment(pot_digest *out, const char *statement_json, const uint8_t *salt,
                                          size_t salt_len, const uint8_t *identity, size_t identity_len,
                                          pot_error **err);
/* POT_OK when the reveal opens the commitment; POT_E_PROOF_MISMATCH when
 * the statement (another challenge, environment or finding), the salt or
 * the identity differ from those committed. */
POT_API pot_status pot_witness_verify_reveal(const pot_digest *commitment, const char *statement_json,
                                             const uint8_t *salt, size_t salt_len, const uint8_t *identity,
                                             size_t identity_len, pot_error **err);

typedef enum pot_witness_mode {
  POT_WITNESS_BITWISE = 1,     /* clusters of replayed state digests */
  POT_WITNESS_NORM_BUCKET = 2, /* clusters of norm buckets */
  POT_WITNESS_MODE_MAX_ENUM_ = 0x7FFFFFFF
} pot_witness_mode;

typedef enum pot_verdict_outcome {
  POT_VERDICT_PASS = 1,
  POT_VERDICT_FAIL = 2,
  POT_VERDICT_INCONCLUSIVE = 3,
  POT_VERDICT_MAX_ENUM_ = 0x7FFFFFFF
} pot_verdict_outcome;

/* Collects revealed values and decides. */
typedef struct pot_verdict pot_verdict;

POT_API pot_status pot_verdict_new(pot_verdict **out, pot_witness_mode mode, uint32_t quorum,
                                   pot_error **err);
POT_API void pot_verdict_free(pot_verdict *verdict);
/* Adds one verifier's revealed value (its replayed digest and bucket). */
POT_API pot_status pot_verdict_add_reveal(pot_verdict *verdict, const uint8_t *identity,
                                          size_t identity_len, const pot_digest *replayed_state,
                                          int64_t bucket, pot_error **err);
/* The largest cluster of equal values must reach the quorum and be strictly
 * larger than any other (else INCONCLUSIVE); it is then compared with the
 * committed state digest (bitwise) or, allowing adjacent buckets, with the
 * committed bucket: the bucket of leaf t's update norm at the spec's
 * resolution (norm-bucket mode; committed_bucket must not be NULL).
 * POT_E_INVALID_ARGUMENT for an identity revealed twice. */
POT_API pot_status pot_verdict_decide(pot_verdict_outcome *outcome, size_t *cluster_size,
                                      pot_verdict *verdict, const pot_digest *committed_state,
                                      const int64_t *committed_bucket, pot_error **err);
/* Why the last pot_verdict_decide decided as it did ("" before). Valid
 * until the next call on the handle. */
POT_API const char *pot_verdict_reason(const pot_verdict *verdict);

/* ------------------------------------------------------------------------ */
/* The reference ledger (docs/ledger.md)                                     */
/* ------------------------------------------------------------------------ */

/* A deterministic state machine with the extrinsics' rules, for chain teams
 * to embed or mirror: post_task, start_training_commitment,
 * post_checkpoint_root, post_randomness (the runtime's, once per block),
 * register_verifier, issue_challenge, submit_opening, commit_witness,
 * reveal_witness_value, finalize_challenge, redraw_committee, prune_task,
 * the disputes' open_dispute, claim_dispute, commit_trace, open_node,
 * rule_dispute and settle_dispute (and the queries ledger_info, task_info,
 * run_info, challenge_info, verifier_info, dispute_info). Calls are JSON
 * documents (docs/ledger.md section 5). One handle must not be used by two
 * threads at once. */
typedef struct pot_ledger pot_ledger;

/* A new ledger from its config, a JSON object with exactly the integer keys
 * draw_delay, opening_window, commit_window, reveal_window (blocks),
 * max_committee_size (the largest committee a task may ask for, at most
 * 1024), min_stake, max_rounds, max_attempts (at most 16) and
 * dispute_window (blocks per bisection round), each >= 1, and dispute_arity
 * (2..256), and optionally "referee" (hex, 1..256 bytes: the identity that
 * rules operator disputes; absent: none) (docs/ledger.md section 1);
 * otherwise POT_E_INVALID_ARGUMENT naming the key, POT_E_MALFORMED for text
 * that is not JSON. */
POT_API pot_status pot_ledger_new(pot_ledger **out, const char *config_json, pot_error **err);
/* Restores a saved state; POT_E_MALFORMED unless the bytes are exactly a
 * state pot_ledger_save produces (every invariant re-checked), POT_E_LIMIT
 * past 64 MiB. */
POT_API pot_status pot_ledger_load(pot_ledger **out, const uint8_t *state, size_t state_len, pot_error **err);
POT_API void pot_ledger_free(pot_ledger *ledger);
/* The canonical state bytes: saving, loading and saving again gives the
 * same bytes. */
POT_API pot_status pot_ledger_save(pot_bytes *out, const pot_ledger *ledger, pot_error **err);
/* Applies one call (a JSON object, docs/ledger.md) and writes its JSON
 * result into *result (NUL-terminated). A refused call returns its specific
 * status (POT_E_STATE, POT_E_PERMISSION, POT_E_CONFLICT, POT_E_NOT_FOUND,
 * POT_E_PROOF_MISMATCH, ...) with a message and leaves the ledger exactly as
 * it was; text that is not JSON is POT_E_MALFORMED, text past
 * POT_MAX_JSON_BYTES POT_E_LIMIT. */
POT_API pot_status pot_ledger_apply(pot_bytes *result, pot_ledger *ledger, const char *call_json,
                                    pot_error **err);
/* Decodes a leaf of the ledger's outcome log to JSON. A challenge's outcome
 * record (docs/PROTOCOL.md section 20.1: the "outcome" hex of a
 * finalize_challenge result) gives the keys challenge_id, attempt, run_id
 * (hex), step, mode, verdict ("pass", "fail", "inconclusive"), cause,
 * cluster_size, cluster_stake, committee_stake and minority, silent,
 * misconfigured, unreplayed (hex identities, sorted). A dispute record
 * (section 20.2, tag "pot/v3/dispute-outcome": the "record" hex of a
 * dispute call that ended the dispute) gives dispute_id, run_id, miner,
 * challenger, lo, hi, end ("step_found", "miner_default",
 * "challenger_default", "both_default", "ruled", "referee_ruled",
 * "referee_default"), phase ("steps", "traces", "operators", "openings",
 * "referee"), rounds, step, agreed, miner_digest, challenger_digest (hex;
 * null until the step is found), miner_trace and challenger_trace
 * ({"size", "root"} or null), op_rounds, node (null before the openings
 * phase), rule (null unless ruled) and losers
 * (["miner"], ["challenger"], both, or none). POT_E_LIMIT past 266,350
 * bytes (a full committee of 1024 identities of 256 bytes), or 803 for a
 * dispute record (two identities of 256 bytes); POT_E_MALFORMED
 * naming the first violation of the record's rules, a record of another
 * tag version named as such. */
POT_API pot_status pot_ledger_outcome_decode(pot_bytes *json, const uint8_t *record, size_t record_len, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Refereed disputes: the step bisection (docs/PROTOCOL.md 22.1)             */
/* ------------------------------------------------------------------------ */

/* The most points a bisection round has: arity - 1 for the largest arity. */
#define POT_BISECTION_MIN_ARITY 2
#define POT_BISECTION_MAX_ARITY 256
#define POT_BISECTION_MAX_POINTS 255

/* The steps both parties claim in a round over (lo, hi] with `arity`
 * (2..256): lo + floor(j (hi - lo) / arity) for j = 1..arity-1 when
 * hi - lo >= arity, else every step of lo+1..hi-1; increasing.
 * *points_len is in/out: the capacity of `points` on entry (POT_BISECTION_MAX_
 * POINTS always suffices), the number of points on return; with points
 * NULL only the number is returned. POT_E_INVALID_ARGUMENT for lo >= hi,
 * an arity outside 2..256, or a capacity too small (the number needed is
 * still returned). Thread-safe. */
POT_API pot_status pot_bisection_points(uint64_t *points, size_t *points_len, uint64_t lo, uint64_t hi,
                                        uint32_t arity, pot_error **err);
/* The most rounds a bisection of (lo, hi] takes: ceil(log_arity(hi - lo)).
 * Same argument checks as pot_bisection_points. Thread-safe. */
POT_API pot_status pot_bisection_rounds(uint32_t *rounds, uint64_t lo, uint64_t hi, uint32_t arity,
                                        pot_error **err);

/* One dispute's step bisection, played round by round: the parties A and B
 * agree on the digest of S_lo and claim different digests of S_hi; each
 * round both claim the digests of the round's points, and the interval
 * narrows to the first point where they differ, until one step is left
 * (hi == lo + 1: S_{hi-1} agreed, S_hi disputed). One handle must not be
 * used by two threads at once. */
typedef struct pot_bisection pot_bisection;

typedef struct pot_bisection_info {
  uint32_t struct_size;   /* sizeof(pot_bisection_info), set by the caller */
  uint64_t lo;            /* the interval (lo, hi] still disputed */
  uint64_t hi;
  uint32_t arity;
  uint32_t rounds_played;
  int done;               /* 1 when hi == lo + 1 */
  pot_digest agreed;      /* the digest both claim for S_lo */
  pot_digest a_hi;        /* A's claim for S_hi */
  pot_digest b_hi;        /* B's claim for S_hi */
} pot_bisection_info;
#define POT_BISECTION_INFO_INIT {sizeof(pot_bisection_info)}

/* POT_E_INVALID_ARGUMENT for lo >= hi, an arity outside 2..256, or
 * a_hi equal to b_hi (nothing is disputed). */
POT_API pot_status pot_bisection_new(pot_bisection **out, uint64_t lo, uint64_t hi, uint32_t arity,
                                     const pot_digest *agreed, const pot_digest *a_hi, const pot_digest *b_hi,
                                     pot_error **err);
POT_API void pot_bisection_free(pot_bisection *bisection);
POT_API pot_status pot_bisection_info_get(pot_bisection_info *out, const pot_bisection *bisection,
                                          pot_error **err);
/* Plays the current round: A's and B's claims, claims_len digests each, for
 * the round's points (pot_bisection_points of the current interval), in
 * order. POT_E_STATE once done; POT_E_INVALID_ARGUMENT (nothing changes)
 * when claims_len is not the round's number of points. */
POT_API pot_status pot_bisection_play_round(pot_bisection *bisection, const pot_digest *a_claims,
                                            const pot_digest *b_claims, size_t claims_len, pot_error **err);

/* The operator trace of one step (docs/PROTOCOL.md 22.2): the top-level ATen
 * operators its forward, backward, clipping and optimizer update ran, in
 * order, then a node listing S_t, each node encoded as leaf data of an RFC
 * 6962 tree. The second phase of a dispute bisects two traces of the
 * disputed step with pot_bisection over node counts, each party claiming
 * pot_op_trace_root of the first p nodes at every point p (agreed at 0:
 * the empty tree's root). Immutable once made: thread-safe to read.
 * pot_replay_trace makes one. */
typedef struct pot_op_trace pot_op_trace;

POT_API void pot_op_trace_free(pot_op_trace *trace);
/* The number of nodes. */
POT_API pot_status pot_op_trace_size(uint64_t *out, const pot_op_trace *trace, pot_error **err);
/* The RFC 6962 root of the first `size` nodes (0..size; the empty tree's
 * root at 0): what a party claims at a bisection point. POT_E_OUT_OF_RANGE
 * past the trace's size. */
POT_API pot_status pot_op_trace_root(pot_digest *out, const pot_op_trace *trace, uint64_t size,
                                     pot_error **err);
/* Node `index`'s leaf data (its leaf hash is SHA-256(0x00 || data)).
 * POT_E_OUT_OF_RANGE past the last node. */
POT_API pot_status pot_op_trace_node(pot_bytes *out, const pot_op_trace *trace, uint64_t index,
                                     pot_error **err);
/* RFC 6962 inclusion proof of node `index` in the tree of the first `size`
 * nodes, and consistency proof from size1 to size2 nodes (concatenated
 * hashes, as pot_merkle_verify_inclusion / _consistency take them).
 * POT_E_OUT_OF_RANGE unless index < size <= the trace's size, resp.
 * 0 < size1 <= size2 <= the trace's size. */
POT_API pot_status pot_op_trace_inclusion_proof(pot_bytes *out, const pot_op_trace *trace, uint64_t index,
                                                uint64_t size, pot_error **err);
POT_API pot_status pot_op_trace_consistency_proof(pot_bytes *out, const pot_op_trace *trace,
                                                  uint64_t size1, uint64_t size2, pot_error **err);
/* A node's leaf data as JSON (UTF-8, not NUL-terminated): name, overload,
 * inputs, outputs, each value an object naming its kind (docs/PROTOCOL.md
 * 22.2). POT_E_MALFORMED / POT_E_LIMIT for bytes that are not one node.
 * Thread-safe. */
POT_API pot_status pot_op_node_json(pot_bytes *out, const uint8_t *node, size_t node_len, pot_error **err);
/* The inverse: a node's JSON (NUL-terminated, at most POT_MAX_JSON_BYTES)
 * to its leaf data; every field present, of its type, nothing else; a
 * double's "bits" decide. POT_E_MALFORMED naming the field, POT_E_LIMIT
 * past a bound. Thread-safe. */
POT_API pot_status pot_op_node_from_json(pot_bytes *out, const char *json, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Loss-curve checks (docs/losscheck.md)                                     */
/* ------------------------------------------------------------------------ */

/* Parameters of the loss-curve checks, set one by one (zstd style). */
typedef enum pot_losscheck_param {
  POT_LOSSCHECK_WINDOW = 1,                  /* steps per window, 1..10000 (20) */
  POT_LOSSCHECK_DECREASE_TOLERANCE = 2,      /* relative, [0, 1) (0.02) */
  POT_LOSSCHECK_DECREASE_SIGMAS = 3,         /* >= 0 (3) */
  POT_LOSSCHECK_MAX_DROP = 4,                /* (0, 1] (0.9) */
  POT_LOSSCHECK_FROZEN_MIN_STEPS = 5,        /* >= 2 (10) */
  POT_LOSSCHECK_FROZEN_EPSILON = 6,          /* >= 0 (0) */
  POT_LOSSCHECK_REGRESSION_SIGMAS = 7,       /* >= 0 (6) */
  POT_LOSSCHECK_REGRESSION_MIN_INCREASE = 8, /* >= 0 (1) */
  POT_LOSSCHECK_MAX_FLAGS = 9,               /* >= 1 (1000) */
  POT_LOSSCHECK_PARAM_MAX_ENUM_ = 0x7FFFFFFF
} pot_losscheck_param;

typedef enum pot_loss_flag_kind {
  POT_LOSS_NO_DECREASE = 0,
  POT_LOSS_IMPLAUSIBLE_RATE = 1,
  POT_LOSS_FROZEN = 2,
  POT_LOSS_REGRESSION = 3,
  POT_LOSS_NON_FINITE = 4,
  POT_LOSS_FLAG_MAX_ENUM_ = 0x7FFFFFFF
} pot_loss_flag_kind;

typedef struct pot_losscheck_params pot_losscheck_params;
typedef struct pot_losscheck_report pot_losscheck_report;

/* Parameters with the documented defaults. */
POT_API pot_status pot_losscheck_params_new(pot_losscheck_params **out, pot_error **err);
POT_API void pot_losscheck_params_free(pot_losscheck_params *params);
/* Sets one parameter; integer parameters need an integral value.
 * POT_E_INVALID_ARGUMENT (naming the parameter) for a value out of range;
 * the parameters are then unchanged. */
POT_API pot_status pot_losscheck_params_set(pot_losscheck_params *params, pot_losscheck_param param,
                                            double value, pot_error **err);
POT_API pot_status pot_losscheck_params_get(double *out, const pot_losscheck_params *params,
                                            pot_losscheck_param param, pot_error **err);
/* Runs the checks over losses[i] = loss of step i + 1 (params NULL: the
 * defaults). NaN and infinite losses are flagged, never skipped. */
POT_API pot_status pot_losscheck_run(pot_losscheck_report **out, const double *losses, size_t losses_len,
                                     const pot_losscheck_params *params, pot_error **err);
POT_API void pot_losscheck_report_free(pot_losscheck_report *report);
/* Number of flags; 0 for NULL. */
POT_API size_t pot_losscheck_report_count(const pot_losscheck_report *report);
/* Flag `index`: kind, first and last step (inclusive, from 1) and a message
 * valid until the report is freed. Each output may be NULL. */
POT_API pot_status pot_losscheck_report_flag(pot_loss_flag_kind *kind, uint64_t *first_step,
                                             uint64_t *last_step, const char **message,
                                             const pot_losscheck_report *report, size_t index,
                                             pot_error **err);
/* Stable lower-case name ("no_decrease", "implausible_rate", "frozen",
 * "regression", "non_finite"), or "unknown". Static storage. */
POT_API const char *pot_loss_flag_name(pot_loss_flag_kind kind);

/* ------------------------------------------------------------------------ */
/* Witnesses: norm buckets                                                   */
/* ------------------------------------------------------------------------ */

/* Bucket of an exact-zero norm, and of a NaN or infinite norm: each matches
 * only itself. */
POT_API int64_t pot_norm_bucket_zero(void);
POT_API int64_t pot_norm_bucket_nonfinite(void);
/* floor(resolution * log2(norm)) (resolution 1..65536 buckets per doubling);
 * the sentinels above for 0 and NaN/Inf. POT_E_INVALID_ARGUMENT for a
 * negative norm or a resolution out of range. */
POT_API pot_status pot_norm_bucket(int64_t *out, double norm, uint32_t resolution, pot_error **err);
/* 1 when the buckets are equal or adjacent (sentinels: only equal), else 0. */
POT_API int pot_norm_buckets_match(int64_t committed, int64_t observed);
/* L2 norm of post - pre over the floating-point tensors whose names start
 * with prefix ("" = all), in float64, in the fixed order of
 * docs/PROTOCOL.md section 13. POT_E_INVALID_ARGUMENT when the two states
 * hold different such tensors or none. */
POT_API pot_status pot_update_norm(double *out, const pot_safetensors *pre,
                                   const pot_safetensors *post, const char *prefix,
                                   pot_error **err);

/* ------------------------------------------------------------------------ */
/* State statistics and their rules (docs/PROTOCOL.md 5.2-5.3)               */
/* ------------------------------------------------------------------------ */

/* The statistics table of the file's tensors (section 5.2): per tensor in
 * name order its dtype, element count, largest finite |x|, L2 norm (both
 * binary64, summed in the section's fixed order) and its non-finite,
 * subnormal and zero elements, as canonical bytes. threads: 0 = every core;
 * the bytes do not depend on it. Since 0.3.0. */
POT_API pot_status pot_safetensors_stats(pot_bytes *out, const pot_safetensors *file, uint32_t threads,
                                         pot_error **err);
/* The same table of a pot_state's tensors, computed as each was added with
 * pot_state_add_tensor (a trainer's state in memory). POT_E_STATE when a
 * tensor was added by its digest (pot_state_add_tensor_digest): its
 * statistics are unknown. Since 0.3.0. */
POT_API pot_status pot_state_stats(pot_bytes *out, const pot_state *state, pot_error **err);
/* tagged("pot/v1/state-stats", table) of a table (section 5.2).
 * POT_E_MALFORMED (POT_E_LIMIT past 2^20 tensors) for bytes that are not
 * exactly a table some state's statistics could be. Since 0.3.0. */
POT_API pot_status pot_state_stats_digest(pot_digest *out, const uint8_t *table, size_t table_len,
                                          pot_error **err);
/* A table as JSON (UTF-8, the data NUL-terminated): {"tensors": [{"name",
 * "dtype", "elements", "max_abs", "l2_norm" (null when the sum of squares
 * overflows binary64), "nonfinite", "subnormal", "zeros"}, ...], "digest":
 * hex}. Errors as pot_state_stats_digest. Since 0.3.0. */
POT_API pot_status pot_state_stats_to_json(pot_bytes *out, const uint8_t *table, size_t table_len,
                                           pot_error **err);
/* The flags (section 5.3) of the step from the state whose table is
 * `before` to the state whose table is `after`, as a JSON array of
 * {"rule", "tensor", "before", "after"}, [] when none; rules "max_abs_jump",
 * "norm_jump", "norm_collapse", "saturated", "nonfinite", "changed". A flag
 * is a reason to replay the step, not a verdict. Errors as
 * pot_state_stats_digest, for either table. Since 0.3.0. */
POT_API pot_status pot_state_flags(pot_bytes *out, const uint8_t *before, size_t before_len,
                                   const uint8_t *after, size_t after_len, pot_error **err);
/* The flagged steps of a run (section 5.3): tables[i] (tables_lens[i]
 * bytes) is the table of S_{i+1}; step 1 is compared with an empty table.
 * A JSON array of {"step", "flags": [as pot_state_flags]} for each flagged
 * step, ascending; [] when none. What a miner seals with on the ledger
 * (docs/ledger.md 2.3) and lists in every opening (check 32). Errors as
 * pot_state_stats_digest, naming the state. Since 0.3.0. */
POT_API pot_status pot_run_flags(pot_bytes *out, const uint8_t *const *tables, const size_t *tables_lens,
                                 size_t tables_len, pot_error **err);

/* ------------------------------------------------------------------------ */
/* Replay (LibTorch; docs/PROTOCOL.md section 21)                            */
/* ------------------------------------------------------------------------ */

/* The model program digest a spec carries: tagged("pot/v1/program", the
 * TorchScript file's bytes). Available in every build. POT_E_IO when the
 * file cannot be read. Thread-safe. */
POT_API pot_status pot_program_digest_file(pot_digest *out, const char *path, pot_error **err);

/* 1 when this libpot can replay, else 0. The shared libpot keeps LibTorch
 * out of the programs that never replay: the replay, recorder, checkpoint,
 * verify and referee calls live in its replay module
 * (libpot-replay.so.<version>, installed beside libpot), loaded on the first
 * such call (or this one), which then costs LibTorch's load time
 * (docs/performance.md). 0 when libpot was built without LibTorch or its
 * module does not load; every call that needs it then returns
 * POT_E_UNSUPPORTED, whose message says why (the module's path and the
 * loader's error). The static libpot holds the replay layer itself.
 * Thread-safe. */
POT_API int pot_replay_available(void);

/* This process's hardware class (docs/PROTOCOL.md 14.4), the value a spec's
 * hardware_class must hold for its steps to be trained or replayed bit for
 * bit here: "cpu-<arch>/aten:<capability>/onednn:<isa>", from the build's
 * architecture, ATen's CPU capability (ATEN_CPU_CAPABILITY or the CPU) and
 * oneDNN's instruction set (ONEDNN_MAX_CPU_ISA or the CPU). *out is a
 * NUL-terminated string that lives as long as the process. POT_E_UNSUPPORTED
 * in a build without LibTorch, or when LibTorch does not tell its CPU
 * capability or oneDNN's ISA, or names one outside the form. Thread-safe. */
POT_API pot_status pot_replay_hardware_class(const char **out, pot_error **err);

/* The LibTorch version this libpot replays with ("1.13.0", its headers'
 * TORCH_VERSION): the framework_version a witness states in its
 * environment (docs/PROTOCOL.md section 19), of the release (major.minor)
 * a spec's framework_version must name for its steps to replay here.
 * Static storage. POT_E_UNSUPPORTED in a build without LibTorch. */
POT_API pot_status pot_replay_framework_version(const char **out, pot_error **err);

/* A loaded model program bound to a spec. A replay changes process-wide
 * LibTorch state (the default CPU generator, the intra-op thread count), so
 * replays are serialised inside pot: concurrent calls on distinct handles
 * are safe but run one at a time; a replay must not overlap LibTorch work of
 * the application's own in another thread. */
typedef struct pot_replay pot_replay;

/* Loads the TorchScript program at program_path. POT_E_PROOF_MISMATCH when
 * its digest is not the spec's model_program_digest, POT_E_INVALID_ARGUMENT
 * when it is not a TorchScript module whose forward takes tensors,
 * POT_E_IO when it cannot be read. */
POT_API pot_status pot_replay_new(pot_replay **out, const pot_spec *spec, const char *program_path,
                                  pot_error **err);
POT_API void pot_replay_free(pot_replay *replay);
/* The forward's argument names (the sample tensor names), in order.
 * POT_E_OUT_OF_RANGE past the last; the string lives as long as replay. */
POT_API pot_status pot_replay_input_name(const char **name, const pot_replay *replay, size_t index,
                                         pot_error **err);

/* What the step's gradient did (check 27, docs/PROTOCOL.md section 21.5):
 * the update applied with the step's gradient and, from the same S_{t-1},
 * with a zero gradient. An element differs when its bits differ; parameters
 * without a gradient are not updated and not counted. */
typedef struct pot_gradient_trace {
  double learning_rate;             /* the spec's rate of the step */
  uint64_t param_elements;          /* elements of the updated parameters */
  uint64_t moved_elements;          /* ... that differ from S_{t-1} */
  uint64_t gradient_elements;       /* ... that differ from the zero-gradient update */
  uint64_t optim_elements;          /* optimizer-state elements written (no step counters) */
  uint64_t optim_gradient_elements; /* ... that differ from the zero-gradient update */
  int ignored;                      /* 1 when check 27 fails on this trace */
} pot_gradient_trace;

typedef struct pot_replay_result {
  uint32_t struct_size;         /* sizeof(pot_replay_result), set by the caller */
  pot_digest post_state_digest; /* digest of the replayed S_t */
  double loss;                  /* the step leaf's loss (section 21.3) */
  double update_norm;           /* section 13 over "param/" tensors */
  int64_t norm_bucket;          /* at the spec's resolution */
  pot_gradient_trace gradient;  /* what the step's gradient did */
  /* State digest of the gradient the optimizer consumed (accumulated and
   * clipped), its tensors named "grad/<parameter>" (docs/PROTOCOL.md
   * 21.3): what a witness states and the miner never publishes. */
  pot_digest gradient_digest;
} pot_replay_result;
#define POT_REPLAY_RESULT_INIT {sizeof(pot_replay_result)}

/* The inputs of one step (docs/PROTOCOL.md 21.4), built once and passed to
 * pot_replay_step, pot_replay_trace, pot_replay_open_op_node and
 * pot_referee_decide_op: the run, the S_{t-1} file, the step's canonical
 * schedule entry (pot_schedule_entry_encode; it gives the step and its
 * micro-batches) and one sample per index of the entry, in the entry's
 * order. It copies what it is given and is only read by those calls, so
 * one handle may serve several calls and threads at once. */
typedef struct pot_step_input pot_step_input;

/* run_id: the commitment's run id; it may be NULL unless the spec's seed
 * policy is per_step, whose seeds name the run (the replay calls fail with
 * POT_E_INVALID_ARGUMENT then). pre_state_path: the S_{t-1} safetensors
 * file, read by each call. POT_E_MALFORMED for a schedule entry that does
 * not decode. */
POT_API pot_status pot_step_input_new(pot_step_input **out, const pot_digest *run_id, const char *pre_state_path,
                                      const uint8_t *schedule_entry, size_t schedule_entry_len, pot_error **err);
POT_API void pot_step_input_free(pot_step_input *input);
/* Appends the safetensors payload of the entry's next index.
 * POT_E_MALFORMED (naming the sample and its dataset index, nothing
 * appended) when it is not safetensors; POT_E_OUT_OF_RANGE once every index
 * of the entry has its sample. */
POT_API pot_status pot_step_input_add_sample(pot_step_input *input, const uint8_t *sample, size_t sample_len,
                                             pot_error **err);
/* Number of samples added; 0 for NULL. */
POT_API size_t pot_step_input_sample_count(const pot_step_input *input);
/* The step its schedule entry names; 0 for NULL. */
POT_API uint64_t pot_step_input_step(const pot_step_input *input);

/* Replays one step (`input`). The learning rates are the spec's
 * (pot_spec_learning_rates): S_{t-1}'s hparam/lr must be step t's rate
 * (POT_E_INVALID_ARGUMENT naming both values), the replayed S_t records
 * step t+1's. post_state_path: when not NULL, S_t is written
 * there (canonical safetensors, atomically). POT_E_INVALID_ARGUMENT when the
 * input does not hold a sample for every index of its entry, or for a
 * state or batch that does not fit the program and spec (the message names
 * the tensor), POT_E_NONFINITE when the loss is NaN or infinite,
 * POT_E_UNSUPPORTED for a spec this process cannot replay bit for bit
 * (another framework_version or attention_backend, or a hardware_class
 * other than pot_replay_hardware_class's), POT_E_BACKEND for a LibTorch
 * failure. out: its struct_size set first (see "Result structs"). */
POT_API pot_status pot_replay_step(pot_replay_result *out, pot_replay *replay, const pot_step_input *input,
                                   const char *post_state_path, pot_error **err);

/* Replays one step as pot_replay_step does (same arguments and errors, no
 * post-state file) and records its operator trace (pot_op_trace); the
 * step's results, the same as without the trace, are
 * pot_op_trace_replay_result's. Slower than pot_replay_step: every
 * operator's tensors are hashed. POT_E_UNSUPPORTED without LibTorch. */
POT_API pot_status pot_replay_trace(pot_op_trace **out, pot_replay *replay, const pot_step_input *input,
                                    pot_error **err);
/* The results of the replay that recorded the trace (pot_replay_step's). */
POT_API pot_status pot_op_trace_replay_result(pot_replay_result *out, const pot_op_trace *trace,
                                              pot_error **err);
/* A party's opening of node `index` of its trace of the step (the same
 * input as pot_replay_trace; docs/PROTOCOL.md 22.3): replays the step
 * again and returns the node, its proofs against the roots of the first
 * index and index + 1 nodes, the earlier nodes and S_{t-1} tensors its
 * inputs name (with proofs), and its input tensors' bytes. A trace of
 * exactly `index` nodes opens as its end; POT_E_OUT_OF_RANGE past that. */
POT_API pot_status pot_replay_open_op_node(pot_bytes *out, pot_replay *replay, const pot_step_input *input,
                                           uint64_t index, pot_error **err);
/* The referee's ruling on node `index` after an operator bisection
 * (docs/PROTOCOL.md 22.3): the agreed root of the first `index` nodes, each
 * party's claimed root of the first index + 1, and each party's opening
 * (pot_replay_open_op_node's bytes, or anything a party sent: a malformed
 * opening loses). The step is `input`, under the task's spec (the
 * replay's); its pre-state file must be the agreed S_{t-1},
 * pre_state_digest (POT_E_PROOF_MISMATCH otherwise). *ruling is JSON:
 * {"a_loses", "b_loses", "rule" ("opening", "source", "operator",
 * "post_state", "step"), "reason", "executed" (one operator was run),
 * "replayed" (the step was)}. POT_E_INVALID_ARGUMENT when a_root == b_root. */
POT_API pot_status pot_referee_decide_op(pot_bytes *ruling, pot_replay *replay, const pot_step_input *input,
                                         const pot_digest *pre_state_digest, uint64_t index,
                                         const pot_digest *agreed_root, const pot_digest *a_root,
                                         const pot_digest *b_root, const uint8_t *a_opening,
                                         size_t a_opening_len, const uint8_t *b_opening,
                                         size_t b_opening_len, pot_error **err);

/* How pot_verify_step compares the replayed step. */
typedef enum pot_verify_mode {
  POT_VERIFY_BITWISE = 1,     /* replayed S_t and loss equal leaf t's, bit for bit */
  POT_VERIFY_NORM_BUCKET = 2, /* cross-architecture: the replayed update's norm bucket matches
                                 the bucket of leaf t's committed norm (section 13), which the
                                 served S_{t-1} -> S_t must give bit for bit (check 26) */
  POT_VERIFY_MODE_MAX_ENUM_ = 0x7FFFFFFF
} pot_verify_mode;

typedef struct pot_verify_result {
  uint32_t struct_size;              /* sizeof(pot_verify_result), set by the caller */
  pot_opening_check check;           /* POT_CHECK_OK when the step verified */
  int replayed;                      /* 1 when the replay ran: the fields below are set */
  pot_digest replayed_state_digest;
  double loss;
  double update_norm;
  int64_t norm_bucket;
  pot_digest committed_state_digest; /* from leaf t */
  double committed_loss;             /* from leaf t */
  double committed_update_norm;      /* from leaf t */
  int64_t committed_norm_bucket;     /* of committed_update_norm, at the spec's resolution */
  pot_gradient_trace gradient;       /* of the replay, when it ran */
  pot_digest gradient_digest;        /* of the replay, when it ran: as pot_replay_result's */
  /* Since 0.3.0, NORM_BUCKET, when the replay ran (0 otherwise): how far
   * the work is from the replay's (section 21.5). loss_error: |committed
   * loss - replayed loss| / max(|each|, 1e-3); update_error: ||d_served -
   * d_replayed|| / max(||d_served||, ||d_replayed||), d = S_t - S_{t-1} over
   * "param/"; tensor_update_error: the largest such ratio of one tensor of
   * at least 64 elements (F32 or F64). */
  double loss_error;
  double update_error;
  double tensor_update_error;
} pot_verify_result;
#define POT_VERIFY_RESULT_INIT {sizeof(pot_verify_result)}

/* Verifies a challenged step completely (docs/PROTOCOL.md section 21.5):
 * every check of pot_opening_verify, then the spec against the commitment,
 * the program against the spec, the learning rate of the served states
 * against the spec's schedule (check 25), the replay from the served S_{t-1}
 * (the manifest's samples and schedule entry) and the comparison of
 * `mode` (NORM_BUCKET needs post_state_path). intra_op_threads: 0 runs with
 * the spec's count (anything else only makes sense with NORM_BUCKET).
 * BITWISE refuses a spec whose hardware_class is not this process's
 * (POT_CHECK_REPLAY, POT_E_UNSUPPORTED: the bits would differ, so the step
 * is not judged); NORM_BUCKET replays on this process's class.
 * Returns POT_OK when the step verified. Otherwise the status of the first
 * failed check (POT_E_PROOF_MISMATCH for a replay that differs), an error
 * naming it, and, unlike other outputs, *out filled with out->check set to
 * that check and the replay's values when it ran. Misuse detected before any
 * check runs (a NULL argument, a bad mode, NORM_BUCKET without
 * post_state_path, a build without LibTorch) leaves *out untouched. */
POT_API pot_status pot_verify_step(pot_verify_result *out, const pot_commitment *commitment,
                                   const pot_spec *spec, const char *program_path,
                                   uint64_t challenged_step, uint64_t log_size,
                                   const pot_digest *log_root, const uint8_t *manifest, size_t manifest_len,
                                   const char *pre_state_path, const char *post_state_path,
                                   pot_verify_mode mode, uint32_t intra_op_threads, pot_error **err);

/* The witness statement (docs/PROTOCOL.md section 19) a committee member
 * commits to after pot_verify_step, as JSON text (NUL-terminated) for
 * pot_witness_commitment and the ledger's reveal: challenge `challenge_id`
 * on step `step` of run `run_id` in `mode`; the environment this process
 * replays in (pot_replay_framework_version, the intra-op threads passed to
 * pot_verify_step, 0 meaning the spec's, and pot_replay_hardware_class);
 * and the finding: kind "replayed" with the replayed digest, bucket and
 * gradient digest when the opening passed its checks and the replay ran (the check is
 * POT_CHECK_OK, or POT_CHECK_REPLAYED_STATE / POT_CHECK_REPLAYED_BUCKET:
 * the value says how it differs), else "invalid_opening" naming
 * result->check. A member that received no opening states "unavailable"
 * itself. POT_E_INVALID_ARGUMENT for a result with no check and no replay;
 * POT_E_UNSUPPORTED in a build without LibTorch. */
POT_API pot_status pot_witness_statement(pot_bytes *out, const pot_verify_result *result, const pot_spec *spec,
                                         const pot_digest *run_id, uint64_t step, uint64_t challenge_id,
                                         pot_verify_mode mode, uint32_t intra_op_threads, pot_error **err);

/* The trainer-side recorder (docs/PROTOCOL.md section 21.4): digests every
 * state, appends the step leaves to the log, keeps every k-th state as a
 * checkpoint in a directory that pot_checkpoints_* serve openings from.
 * States are passed as a pot_safetensors_writer holding the tensors under
 * canonical names (it is only read). One handle per thread. */
typedef struct pot_recorder pot_recorder;

/* Creates the checkpoint directory (POT_E_CONFLICT when it holds a run) and
 * copies the program in (POT_E_PROOF_MISMATCH when its digest is not the
 * spec's). checkpoint_every >= 1. POT_E_UNSUPPORTED for a spec this build's
 * verifiers refuse to replay (another framework, framework_version
 * major.minor or attention_backend; docs/PROTOCOL.md 21.3), or whose
 * hardware_class is not this process's (pot_replay_hardware_class: the
 * trainer would not compute the spec's steps). */
POT_API pot_status pot_recorder_new(pot_recorder **out, const char *dir, const pot_spec *spec,
                                    const char *program_path, uint64_t checkpoint_every,
                                    pot_error **err);
/* Reopens the directory of a recorder whose process stopped (killed at any
 * point, crashed, or closed early) to continue its run (docs/python.md
 * "Crash and resume"): the run continues after the last stored checkpoint
 * c that the log and steps.jsonl hold whole and that digests to the
 * recorded state; later records, torn writes included, are cut back.
 * *step receives c and *state_path (NUL-terminated) the checkpoint S_c to
 * load into the model and optimizer; the next step begun is c + 1.
 * POT_E_STATE for a directory without a commitment (no step ever began:
 * start again in an empty directory), POT_E_NOT_FOUND without
 * pot-run.json, POT_E_MALFORMED naming the file for what no crash leaves
 * (a record that contradicts the log, a program or schedule that is not
 * the commitment's). */
POT_API pot_status pot_recorder_resume(pot_recorder **out, uint64_t *step, pot_bytes *state_path, const char *dir,
                                       pot_error **err);
POT_API void pot_recorder_free(pot_recorder *recorder);
/* Records S_0 (checkpoint 0); *initial_state_digest is the commitment's. */
POT_API pot_status pot_recorder_start(pot_digest *initial_state_digest, pot_recorder *recorder,
                                      const pot_safetensors_writer *s0, pot_error **err);
/* The training commitment and its schedule entries (steps 1..n, in order),
 * checked against it (POT_E_PROOF_MISMATCH); needed to serve openings. */
POT_API pot_status pot_recorder_set_commitment(pot_recorder *recorder, const pot_commitment *commitment,
                                               const uint8_t *const *entries, const size_t *entries_lens,
                                               size_t entries_len, pot_error **err);
/* Starts step `step` (the next one; POT_E_STATE otherwise) and applies the
 * seed policy to LibTorch's default CPU generator of this process: per_step
 * seeds it (and returns the seed in *seed, so a trainer with its own torch
 * can call torch.manual_seed(seed) too); single_seed restores S_{t-1}'s
 * rng/cpu; *seed is 0 for those. Takes the lock every pot replay holds, so
 * it never reseeds in the middle of a replay on another thread. */
POT_API pot_status pot_recorder_begin_step(uint64_t *seed, pot_recorder *recorder, uint64_t step,
                                           pot_error **err);
/* Ends the step begun: S_t (with hparam/lr, and rng/cpu under single_seed)
 * and the step's loss (section 21.3). *state_digest may be NULL. The first
 * step recorded is refused (POT_E_LIMIT, naming the most steps the state
 * allows) when the run's record, which every opening carries (section 18),
 * could not fit an opening manifest. */
POT_API pot_status pot_recorder_end_step(pot_digest *state_digest, pot_recorder *recorder,
                                         const pot_safetensors_writer *state, double loss,
                                         pot_error **err);
/* Number of steps recorded; 0 for NULL (and in a build without LibTorch,
 * where no recorder can exist). */
POT_API uint64_t pot_recorder_size(const pot_recorder *recorder);
/* Root of the log's first `size` leaves (to post on chain). */
POT_API pot_status pot_recorder_root(pot_digest *out, const pot_recorder *recorder, uint64_t size,
                                     pot_error **err);
/* RFC 6962 consistency proof from size1 to size2 (concatenated hashes). */
POT_API pot_status pot_recorder_consistency_proof(pot_bytes *out, const pot_recorder *recorder,
                                                  uint64_t size1, uint64_t size2, pot_error **err);
/* Flushes the log and returns its root; with a commitment, every declared
 * step must be recorded (POT_E_STATE). */
POT_API pot_status pot_recorder_finish(pot_digest *root, pot_recorder *recorder, pot_error **err);

/* A recorder's checkpoint directory, opened to serve openings. One handle
 * per thread (it caches re-derived states). */
typedef struct pot_checkpoints pot_checkpoints;

POT_API pot_status pot_checkpoints_open(pot_checkpoints **out, const char *dir, pot_error **err);
POT_API void pot_checkpoints_free(pot_checkpoints *checkpoints);
/* Steps recorded; 0 for NULL (and in a build without LibTorch). */
POT_API uint64_t pot_checkpoints_size(const pot_checkpoints *checkpoints);
/* Path (NUL-terminated in out->data; out->len excludes the NUL) of a file
 * holding S_step, checked against the log before it is returned,
 * re-deriving it from the nearest checkpoint before it when needed with the samples of
 * dataset_dir: a directory of samples (one %06d.safetensors file per dataset
 * index), or a token stream (its stream.json, or a directory holding one:
 * docs/cli.md "Stream datasets"), checked against the committed dataset
 * root (POT_E_PROOF_MISMATCH); each replayed
 * state must match the log (POT_E_PROOF_MISMATCH). *replayed (may be NULL)
 * receives the number of steps replayed. */
POT_API pot_status pot_checkpoints_state_path(pot_bytes *out, uint64_t *replayed,
                                              pot_checkpoints *checkpoints, uint64_t step,
                                              const char *dataset_dir, pot_error **err);
/* The opening manifest of step `step` against the log's first log_size
 * leaves, pre_state_ref naming the (re-derived) S_{t-1} file (a path
 * relative to the checkpoint directory) and, when
 * serve_post_state is non-zero, post_state_ref naming S_t (for the
 * cross-architecture path; may cost another re-derivation). The samples of a
 * token stream are opened as window proofs with the stream's descriptor. */
POT_API pot_status pot_checkpoints_opening(pot_bytes *out, pot_checkpoints *checkpoints, uint64_t step,
                                           uint64_t log_size, const char *dataset_dir,
                                           int serve_post_state, pot_error **err);
/* The committed step leaf of step `step` (docs/PROTOCOL.md 10) and its
 * RFC 6962 inclusion proof in the log's first log_size leaves
 * (concatenated hashes): what a miner posts for that step in a ledger
 * dispute (docs/ledger.md 2.12, 2.13: open_dispute's hi_leaf / lo_leaf,
 * claim_dispute's claims). Replays nothing. POT_E_OUT_OF_RANGE unless
 * 1 <= step <= log_size <= the steps recorded; POT_E_STATE for a directory
 * without a commitment. */
POT_API pot_status pot_checkpoints_leaf(pot_bytes *leaf, pot_bytes *proof, pot_checkpoints *checkpoints,
                                        uint64_t step, uint64_t log_size, pot_error **err);
/* The flagged steps of the log's first log_size leaves (section 5.3), as
 * pot_run_flags gives them, from the tables the recorder kept in stats/
 * (POT_E_MALFORMED naming a file that is not the table steps.jsonl records):
 * the list a miner seals its run with (docs/ledger.md 2.3). Every opening
 * pot_checkpoints_opening serves carries them (check 32).
 * POT_E_OUT_OF_RANGE when log_size exceeds the steps recorded. Since 0.3.0. */
POT_API pot_status pot_checkpoints_run_flags(pot_bytes *out, pot_checkpoints *checkpoints, uint64_t log_size,
                                             pot_error **err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POT_H */
