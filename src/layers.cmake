# The layers of src/ (DESIGN.md §2): one folder each, listed bottom up, each
# with the layers it may use directly (the ones below those come with them).
# This table is the only statement of the floors: src/CMakeLists.txt builds
# one target per layer linking exactly these, and cmake/PotLayering.cmake
# refuses, at configure time and as a test, any #include that reaches a
# layer not below (a back edge, an unlisted folder, LibTorch outside replay).
# Plain set() calls: it is read by `cmake -P` too.
set(POT_LAYERS
  common      # errors, statuses, bytes, files
  repro       # the reproducible arithmetic pot-repro/1 on arrays: sums, exp, log, matrix products (PROTOCOL 14.6)
  hash        # SHA-256, safetensors, the state digest (PROTOCOL 4-6)
  codec       # canonical protobuf decoding, strict JSON fields (PROTOCOL 14.1)
  merkle      # RFC 6962 logs, proofs, stored trees (PROTOCOL 3, 7)
  data        # datasets: token streams, their files and JSON forms (PROTOCOL 8)
  challenge   # the challenge arithmetic: draws, detection, deterrence (PROTOCOL 11-12)
  bond        # balances and bonds, the deterrent bond (PROTOCOL 12.2, docs/ledger.md 2.18)
  spec        # the execution spec: optimizer, LR schedule, hardware class, seeds (PROTOCOL 9, 14)
  statecheck  # per-tensor statistics of states and the rules over consecutive ones (PROTOCOL 5.2-5.3)
  commit      # commitments, schedules, step leaves, openings (PROTOCOL 10, 13, 15-18)
  losscheck   # the loss-curve checks (docs/losscheck.md)
  task        # tasks (PROTOCOL 19)
  witness     # witness statements, norm buckets, gradient traces (PROTOCOL 20)
  dispute     # step and operator bisection, the referee's rules (PROTOCOL 22)
  game        # the reference ledger (docs/ledger.md)
  repro_aten  # pot-repro/1's kernels registered into ATen, and the gate of its operators (PROTOCOL 14.6)
  replay      # single-step replay on LibTorch (PROTOCOL 21)
  capi        # the C API: the only export
  cli         # the pot tool: a client of the C API (include/pot.h) only
)
set(POT_LAYER_common_DEPS)
set(POT_LAYER_repro_DEPS common)
set(POT_LAYER_hash_DEPS common)
set(POT_LAYER_codec_DEPS hash)
set(POT_LAYER_merkle_DEPS hash)
set(POT_LAYER_data_DEPS codec)
set(POT_LAYER_challenge_DEPS hash)
set(POT_LAYER_bond_DEPS common)
set(POT_LAYER_spec_DEPS codec)
set(POT_LAYER_statecheck_DEPS spec)
set(POT_LAYER_commit_DEPS spec merkle data statecheck)
set(POT_LAYER_losscheck_DEPS common)
set(POT_LAYER_task_DEPS commit)
set(POT_LAYER_witness_DEPS commit)
set(POT_LAYER_dispute_DEPS merkle)
set(POT_LAYER_game_DEPS task witness dispute challenge bond)
set(POT_LAYER_repro_aten_DEPS repro)
set(POT_LAYER_replay_DEPS commit witness dispute repro_aten)
set(POT_LAYER_capi_DEPS game replay losscheck statecheck)
set(POT_LAYER_cli_DEPS)
# The only layers that may include LibTorch headers (torch/, ATen/, c10/).
set(POT_TORCH_LAYERS repro_aten replay)
