package pot

/*
#cgo pkg-config: pot
#include <stdlib.h>
#include <pot.h>
*/
import "C"

import (
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// Compile-time constants of the pot.h this package was built against.
const (
	// ABIVersion is the POT_ABI_VERSION of the pot.h the binding was
	// compiled with. LoadedABIVersion must report the same value.
	ABIVersion = 4
	// DigestSize is POT_DIGEST_SIZE, the size of a Digest in bytes.
	DigestSize = 32
	// ChunkSize is POT_CHUNK_SIZE, the bytes per chunk leaf of a tensor digest.
	ChunkSize = 65536
	// MaxNameBytes is POT_MAX_NAME_BYTES, the longest tensor name accepted.
	MaxNameBytes = 1024
	// MaxDims is POT_MAX_DIMS, the largest tensor rank accepted.
	MaxDims = 32
	// StepLeafSize is POT_STEP_LEAF_SIZE, the size of step leaf data.
	StepLeafSize = 132
	// MaxChallengeRounds is POT_MAX_CHALLENGE_ROUNDS.
	MaxChallengeRounds = 65536
	// MaxBeaconBytes is POT_MAX_BEACON_BYTES, the longest beacon value.
	MaxBeaconBytes = 1024
	// WitnessSaltSize is POT_WITNESS_SALT_SIZE, the size of a fresh salt.
	WitnessSaltSize = 32
	// MaxJSONBytes is POT_MAX_JSON_BYTES, the longest JSON text accepted
	// (SpecFromJSON, CommitmentFromJSON, Ledger.Apply): StatusLimit beyond.
	MaxJSONBytes = 1 << 20
	// MaxStreamPositions is POT_MAX_STREAM_POSITIONS, the most positions
	// one SeededScheduleStream call returns.
	MaxStreamPositions = 1 << 24
	// MaxRatesPerCall is POT_MAX_RATES_PER_CALL, the most learning rates
	// one Spec.LearningRates call returns.
	MaxRatesPerCall = 1 << 24
)

// Each line fails to compile unless the Go constant equals the macro of
// pot.h (the index of a one-element array must be 0).
var (
	_ = [1]int{}[ABIVersion-C.POT_ABI_VERSION]
	_ = [1]int{}[DigestSize-C.POT_DIGEST_SIZE]
	_ = [1]int{}[ChunkSize-C.POT_CHUNK_SIZE]
	_ = [1]int{}[MaxNameBytes-C.POT_MAX_NAME_BYTES]
	_ = [1]int{}[MaxDims-C.POT_MAX_DIMS]
	_ = [1]int{}[StepLeafSize-C.POT_STEP_LEAF_SIZE]
	_ = [1]int{}[MaxChallengeRounds-C.POT_MAX_CHALLENGE_ROUNDS]
	_ = [1]int{}[MaxBeaconBytes-C.POT_MAX_BEACON_BYTES]
	_ = [1]int{}[WitnessSaltSize-C.POT_WITNESS_SALT_SIZE]
	_ = [1]int{}[MaxJSONBytes-C.POT_MAX_JSON_BYTES]
	_ = [1]int{}[MaxStreamPositions-C.POT_MAX_STREAM_POSITIONS]
	_ = [1]int{}[MaxRatesPerCall-C.POT_MAX_RATES_PER_CALL]
)

// abiErr is set at initialisation when the loaded libpot has another ABI.
var abiErr error

func init() {
	abiErr = checkABI(uint32(C.pot_abi_version()), ABIVersion, C.GoString(C.pot_version_string()))
}

// checkABI returns the error every call reports when the loaded library's
// ABI version differs from the one the binding was built for.
func checkABI(loaded, built uint32, version string) error {
	if loaded == built {
		return nil
	}
	return &Error{Code: StatusUnsupported, Message: fmt.Sprintf(
		"ABI mismatch: this Go binding was built against pot.h with POT_ABI_VERSION %d, "+
			"but the loaded libpot %s reports ABI version %d; rebuild the binding against "+
			"the installed libpot (PKG_CONFIG_PATH) or load the matching library (LD_LIBRARY_PATH)",
		built, version, loaded)}
}

// ABIError reports whether the loaded libpot can be used: nil when its ABI
// version equals ABIVersion, else the *Error (code StatusUnsupported) that
// every fallible function of the package then returns.
func ABIError() error { return abiErr }

// Version returns the version string of the libpot loaded at run time,
// e.g. "0.3.0".
func Version() string { return C.GoString(C.pot_version_string()) }

// LoadedABIVersion returns pot_abi_version() of the libpot loaded at run
// time. The package refuses to work (see ABIError) unless it equals
// ABIVersion.
func LoadedABIVersion() uint32 { return uint32(C.pot_abi_version()) }

// Status is a libpot status code (pot_status). Values are frozen; new
// codes are only appended.
type Status uint32

// The status codes of pot.h.
const (
	StatusOK              Status = C.POT_OK
	StatusInvalidArgument Status = C.POT_E_INVALID_ARGUMENT // NULL pointer, bad enum, inconsistent arguments
	StatusOutOfMemory     Status = C.POT_E_OUT_OF_MEMORY
	StatusIO              Status = C.POT_E_IO             // a file could not be opened, read or written
	StatusMalformed       Status = C.POT_E_MALFORMED      // input bytes do not parse as the expected format
	StatusLimit           Status = C.POT_E_LIMIT          // input exceeds a documented bound
	StatusOutOfRange      Status = C.POT_E_OUT_OF_RANGE   // index or size outside the valid range
	StatusProofLength     Status = C.POT_E_PROOF_LENGTH   // proof has the wrong number of hashes
	StatusProofMismatch   Status = C.POT_E_PROOF_MISMATCH // proof is well-formed but does not verify
	StatusDuplicate       Status = C.POT_E_DUPLICATE      // a name given twice
	StatusState           Status = C.POT_E_STATE          // call not valid in the handle's current state
	StatusUnsupported     Status = C.POT_E_UNSUPPORTED    // valid input this version does not support
	StatusBackend         Status = C.POT_E_BACKEND        // OpenSSL (or LibTorch) reported a failure
	StatusInternal        Status = C.POT_E_INTERNAL       // a bug in pot
	StatusNotFound        Status = C.POT_E_NOT_FOUND      // no entry under that name
	StatusPermission      Status = C.POT_E_PERMISSION     // the caller's identity may not do this
	StatusConflict        Status = C.POT_E_CONFLICT       // contradicts what is already recorded
	StatusNonFinite       Status = C.POT_E_NONFINITE      // a loss or norm that must be finite is NaN or infinite
)

// String returns the upper-case name of the status as pot_status_name
// gives it ("POT_E_MALFORMED"), or "POT_E_UNKNOWN" for a value that is not
// a pot_status.
func (s Status) String() string {
	if uint64(s) > math.MaxInt32 {
		return "POT_E_UNKNOWN"
	}
	return C.GoString(C.pot_status_name(C.pot_status(s)))
}

// Error is an error reported by libpot (or by the binding for a misuse it
// detects before calling the library): the status code and a message.
type Error struct {
	Code    Status
	Message string
}

// Error formats the error as "pot: <message> (<POT_E_NAME>)".
func (e *Error) Error() string {
	if e.Message == "" {
		return "pot: " + e.Code.String()
	}
	return "pot: " + e.Message + " (" + e.Code.String() + ")"
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, ErrProofMismatch) tests the code whatever the message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && e != nil && t.Code == e.Code
}

// Sentinel errors, one per status code, for errors.Is. They match any
// *Error with the same code.
var (
	ErrInvalidArgument = &Error{Code: StatusInvalidArgument}
	ErrOutOfMemory     = &Error{Code: StatusOutOfMemory}
	ErrIO              = &Error{Code: StatusIO}
	ErrMalformed       = &Error{Code: StatusMalformed}
	ErrLimit           = &Error{Code: StatusLimit}
	ErrOutOfRange      = &Error{Code: StatusOutOfRange}
	ErrProofLength     = &Error{Code: StatusProofLength}
	ErrProofMismatch   = &Error{Code: StatusProofMismatch}
	ErrDuplicate       = &Error{Code: StatusDuplicate}
	ErrState           = &Error{Code: StatusState}
	ErrUnsupported     = &Error{Code: StatusUnsupported}
	ErrBackend         = &Error{Code: StatusBackend}
	ErrInternal        = &Error{Code: StatusInternal}
	ErrNotFound        = &Error{Code: StatusNotFound}
	ErrPermission      = &Error{Code: StatusPermission}
	ErrConflict        = &Error{Code: StatusConflict}
	ErrNonFinite       = &Error{Code: StatusNonFinite}
)

// toError turns a status and the owned pot_error of a failed call into an
// *Error (nil for POT_OK) and frees the pot_error.
func toError(s C.pot_status, cerr *C.pot_error) error {
	if s == C.POT_OK {
		if cerr != nil {
			C.pot_error_free(cerr)
		}
		return nil
	}
	e := &Error{Code: Status(s)}
	if cerr != nil {
		e.Message = C.GoString(C.pot_error_message(cerr))
		C.pot_error_free(cerr)
	}
	return e
}

// newError makes an *Error for a misuse the binding detects itself.
func newError(code Status, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// closedError is what a method of a closed handle returns.
func closedError(kind string) error {
	return newError(StatusState, "%s is closed", kind)
}

// Digest is a 32-byte SHA-256 digest (pot_digest).
type Digest [DigestSize]byte

// String returns the 64 lower-case hex characters of d.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// MarshalText encodes d as lower-case hex (encoding.TextMarshaler), so a
// Digest is a hex string in JSON.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses hex as ParseDigest does (encoding.TextUnmarshaler).
func (d *Digest) UnmarshalText(text []byte) error {
	v, err := ParseDigest(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDigest parses exactly 64 hex characters (either case) with
// pot_digest_from_hex. It returns an *Error with code StatusMalformed for
// anything else.
func ParseDigest(s string) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	if strings.IndexByte(s, 0) >= 0 {
		return Digest{}, newError(StatusMalformed, "digest hex contains a NUL byte")
	}
	cs := C.CString(s)
	defer C.free(unsafe.Pointer(cs))
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_digest_from_hex(out, cs, cerr)
	})
}

// c returns d as the C pot_digest it has the layout of.
func (d *Digest) c() *C.pot_digest { return (*C.pot_digest)(unsafe.Pointer(d)) }

// digestOut runs a C call that writes one pot_digest and returns it, or the
// zero digest and the call's error. Callers keep their handles alive
// (runtime.KeepAlive) after it returns.
func digestOut(call func(out *C.pot_digest, cerr **C.pot_error) C.pot_status) (Digest, error) {
	var d Digest
	var cerr *C.pot_error
	if err := toError(call(d.c(), &cerr), cerr); err != nil {
		return Digest{}, err
	}
	return d, nil
}

// cDigest returns a pointer to a copy of d, to pass as a const pot_digest *.
func cDigest(d Digest) *C.pot_digest { return d.c() }

// Sha256 returns the plain SHA-256 of data (no domain tag).
func Sha256(data []byte) (Digest, error) {
	if abiErr != nil {
		return Digest{}, abiErr
	}
	return digestOut(func(out *C.pot_digest, cerr **C.pot_error) C.pot_status {
		return C.pot_sha256(out, voidPtr(data), C.size_t(len(data)), cerr)
	})
}

// bytesPtr returns a pointer to b's first byte, or nil for an empty slice.
// The pointer is only passed for the duration of one call.
func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// voidPtr is bytesPtr as an unsafe.Pointer, for const void * parameters.
func voidPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// shapePtr returns a pointer to the first dimension, or nil for rank 0.
func shapePtr(shape []uint64) *C.uint64_t {
	if len(shape) == 0 {
		return nil
	}
	return (*C.uint64_t)(unsafe.Pointer(&shape[0]))
}

// takeBytes copies a pot_bytes into Go memory and frees it.
func takeBytes(b *C.pot_bytes) []byte {
	defer C.pot_bytes_free(b)
	if b.data == nil {
		return []byte{}
	}
	out := make([]byte, int(b.len))
	copy(out, unsafe.Slice((*byte)(unsafe.Pointer(b.data)), int(b.len)))
	return out
}

// takeString copies a NUL-terminated pot_bytes (len excludes the NUL) into
// a Go string and frees it.
func takeString(b *C.pot_bytes) string {
	defer C.pot_bytes_free(b)
	if b.data == nil {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(b.data)), int(b.len)))
}

// cString returns a C copy of s (free it with C.free). Strings with a NUL
// byte cannot cross the C API: they give an *Error with code
// StatusInvalidArgument naming what.
func cString(s, what string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, newError(StatusInvalidArgument, "%s contains a NUL byte", what)
	}
	return C.CString(s), nil
}

// optString is cString for optional strings: "" gives NULL.
func optString(s, what string) (*C.char, error) {
	if s == "" {
		return nil, nil
	}
	return cString(s, what)
}

// freeString frees a string from cString (NULL is fine).
func freeString(s *C.char) {
	if s != nil {
		C.free(unsafe.Pointer(s))
	}
}
