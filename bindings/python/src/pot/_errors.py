"""The exceptions of pot: one class per pot_status, under pot.Error.

The SWIG typemaps of pot._pot raise them (through _from_status) when a C call
returns a status other than POT_OK; the binding raises them too for what it
checks itself (a closed handle is a StateError, a digest that is not 32 bytes
or a string with a NUL character an InvalidArgumentError).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Dict, Optional, Type


class Status(enum.IntEnum):
    """The pot_status codes (frozen values; new ones are only appended)."""

    OK = 0
    INVALID_ARGUMENT = 1
    OUT_OF_MEMORY = 2
    IO = 3
    MALFORMED = 4
    LIMIT = 5
    OUT_OF_RANGE = 6
    PROOF_LENGTH = 7
    PROOF_MISMATCH = 8
    DUPLICATE = 9
    STATE = 10
    UNSUPPORTED = 11
    BACKEND = 12
    INTERNAL = 13
    NOT_FOUND = 14
    PERMISSION = 15
    CONFLICT = 16
    NONFINITE = 17

    @property
    def c_name(self) -> str:
        """The C name, as pot_status_name gives it: "POT_OK", "POT_E_MALFORMED"..."""
        return "POT_OK" if self is Status.OK else "POT_E_" + self.name

    def __str__(self) -> str:
        return self.c_name


def status_name(code: int) -> str:
    """pot_status_name: "POT_E_MALFORMED", or "POT_E_UNKNOWN" for another value."""
    try:
        return Status(code).c_name
    except ValueError:
        return "POT_E_UNKNOWN"


class Error(Exception):
    """A failed pot call.

    Attributes:
        code: the pot_status (a Status, or a plain int for a code this binding
            does not know).
        status: its C name ("POT_E_PROOF_MISMATCH").
        message: the library's message.
        check: for verify_opening and verify_step, the OpeningCheck that
            failed; None elsewhere.
        result: for verify_step, the VerifyResult the call filled in spite of
            the failure; None elsewhere.
        partial: the raw output behind check/result, as pot._pot returned it.
    """

    default_code: ClassVar[int] = -1

    def __init__(self, message: str, code: Optional[int] = None, partial: Any = None) -> None:
        if code is None:
            code = self.default_code
        try:
            code = Status(code)
        except ValueError:
            pass
        super().__init__(message)
        self.code: int = code
        self.status: str = status_name(code)
        self.message: str = message
        self.partial: Any = partial
        self.check: Any = None
        self.result: Any = None

    def __str__(self) -> str:
        return f"{self.status}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, code={int(self.code)})"

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.message, int(self.code), self.partial, self.check, self.result))


def _rebuild(cls: Type[Error], message: str, code: int, partial: Any, check: Any, result: Any) -> Error:
    e = cls(message, code, partial)
    e.check, e.result = check, result
    return e


class InvalidArgumentError(Error, ValueError):
    """POT_E_INVALID_ARGUMENT: a NULL (None) argument, bad enum, inconsistent arguments."""

    default_code = Status.INVALID_ARGUMENT


class OutOfMemoryError(Error, MemoryError):
    """POT_E_OUT_OF_MEMORY."""

    default_code = Status.OUT_OF_MEMORY


class IoError(Error, OSError):
    """POT_E_IO: a file could not be opened, read or written."""

    default_code = Status.IO


class MalformedError(Error, ValueError):
    """POT_E_MALFORMED: input bytes do not parse as the expected format."""

    default_code = Status.MALFORMED


class LimitError(Error, ValueError):
    """POT_E_LIMIT: input exceeds a documented bound."""

    default_code = Status.LIMIT


class OutOfRangeError(Error, IndexError):
    """POT_E_OUT_OF_RANGE: index or size outside the valid range."""

    default_code = Status.OUT_OF_RANGE


class ProofLengthError(Error):
    """POT_E_PROOF_LENGTH: a proof has the wrong number of hashes."""

    default_code = Status.PROOF_LENGTH


class ProofMismatchError(Error):
    """POT_E_PROOF_MISMATCH: a well-formed proof (or value) that does not verify."""

    default_code = Status.PROOF_MISMATCH


class DuplicateError(Error):
    """POT_E_DUPLICATE: a name given twice."""

    default_code = Status.DUPLICATE


class StateError(Error):
    """POT_E_STATE: a call not valid in the handle's current state (a closed handle too)."""

    default_code = Status.STATE


class UnsupportedError(Error):
    """POT_E_UNSUPPORTED: valid input this version does not support (replay without LibTorch)."""

    default_code = Status.UNSUPPORTED


class BackendError(Error):
    """POT_E_BACKEND: OpenSSL or LibTorch reported a failure."""

    default_code = Status.BACKEND


class InternalError(Error):
    """POT_E_INTERNAL: a bug in pot."""

    default_code = Status.INTERNAL


class NotFoundError(Error, LookupError):
    """POT_E_NOT_FOUND: no entry under that name."""

    default_code = Status.NOT_FOUND


class PermissionDeniedError(Error):
    """POT_E_PERMISSION: the caller's identity may not do this (ledger)."""

    default_code = Status.PERMISSION


class ConflictError(Error):
    """POT_E_CONFLICT: contradicts what is already recorded."""

    default_code = Status.CONFLICT


class NonFiniteError(Error):
    """POT_E_NONFINITE: a loss or norm that must be finite is NaN or infinite."""

    default_code = Status.NONFINITE


ERROR_CLASSES: Dict[int, Type[Error]] = {
    cls.default_code: cls
    for cls in (
        InvalidArgumentError, OutOfMemoryError, IoError, MalformedError, LimitError,
        OutOfRangeError, ProofLengthError, ProofMismatchError, DuplicateError, StateError,
        UnsupportedError, BackendError, InternalError, NotFoundError, PermissionDeniedError,
        ConflictError, NonFiniteError,
    )
}


def error_class(code: int) -> Type[Error]:
    """The exception class of a status code (Error for an unknown one)."""
    return ERROR_CLASSES.get(code, Error)


def _from_status(code: int, message: bytes, partial: Any = None) -> Error:
    """Called by the SWIG typemaps: the exception for a failed call."""
    return error_class(code)(message.decode("utf-8", "replace"), code, partial)
