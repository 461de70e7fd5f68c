// Package pot is the Go binding of libpot, the Proof-of-Training SDK.
//
// It wraps the C API of include/pot.h with cgo (#cgo pkg-config: pot) and
// follows its conventions in Go form:
//
//   - Every fallible function returns an error. Errors that come from libpot
//     are *Error values carrying the status code (Code, a Status whose String
//     is the POT_E_* name) and the library's message; use errors.As to get
//     at them, or errors.Is against the sentinels (ErrProofMismatch,
//     ErrProofLength, ...), which compare the code only.
//   - Handles (State, Safetensors, Log, Tree, Spec, Commitment, Opening,
//     Verdict, Ledger, Replay, Recorder, Checkpoints, ...) are Go values
//     owning one C handle. Call Close
//     when done; a finalizer frees a forgotten handle, but only as a safety
//     net. A method called after Close returns an *Error with code
//     StatusState (accessors without an error result return zero values).
//   - Every handle type is safe for concurrent use: each serialises access
//     with its own lock (read-only handles and the read methods of Tree take
//     a shared lock, so they run in parallel, as the C API allows).
//   - Bytes go in and come out as []byte; the C side never keeps a Go
//     pointer (SafetensorsWriter, whose C writer borrows tensor data, copies
//     it into C memory it frees on Close).
//   - Digests are the 32-byte Digest type; String gives lower-case hex and
//     ParseDigest reads it back.
//
// # ABI check
//
// At package initialisation the binding compares pot_abi_version() of the
// libpot it was loaded with against the POT_ABI_VERSION of the pot.h it was
// compiled with (ABIVersion). On a mismatch the package does not panic:
// ABIError returns the problem and every fallible function that calls into
// the library (constructors and handle-free functions; handles cannot exist
// without a constructor) returns that same *Error, with code
// StatusUnsupported, without calling libpot. Functions without an error
// result (Version, LoadedABIVersion, the constant and name accessors,
// NormBucketsMatch) still call the library. This lets a program report the
// mismatch instead of crashing at start-up.
//
// # Replay
//
// Replay, VerifyStep, Recorder and Checkpoints need a libpot built with
// LibTorch (ReplayAvailable); without it they return an *Error with code
// StatusUnsupported. A replay changes process-wide LibTorch state, so
// libpot runs replays one at a time, and Recorder.BeginStep seeds the
// process's default CPU generator: do not begin a step while another
// goroutine replays.
//
// docs/PROTOCOL.md in the pot repository defines every digest, leaf and
// proof byte for byte; the doc comments here say which section applies.
package pot
