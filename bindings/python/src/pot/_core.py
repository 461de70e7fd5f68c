"""Versions, constants and the Digest type."""

from __future__ import annotations

from typing import Any, Iterable, List, Union

from . import _pot
from ._errors import InvalidArgumentError, MalformedError

#: POT_ABI_VERSION of the pot.h this binding was built against.
ABI_VERSION: int = _pot.POT_ABI_VERSION
#: POT_PROTOCOL_VERSION: the protocol version (docs/PROTOCOL.md) tasks and
#: commitments are written and read in.
PROTOCOL_VERSION: int = _pot.POT_PROTOCOL_VERSION
#: POT_VERSION_STRING of the pot.h this binding was built against.
BUILT_VERSION: str = _pot.POT_VERSION_STRING


def _check_abi(loaded: int, built: int) -> None:
    if loaded != built:
        raise ImportError(
            f"pot: the loaded libpot has ABI version {loaded} ({_pot.pot_version_string()}), "
            f"this binding was built for ABI version {built} ({BUILT_VERSION}): "
            "rebuild the binding against the installed libpot")


_check_abi(_pot.pot_abi_version(), ABI_VERSION)


def version() -> str:
    """Version of the libpot loaded at run time (pot_version_string), e.g. "0.3.0"."""
    return _pot.pot_version_string()


def protocol_version() -> int:
    """Protocol version of the libpot loaded at run time (pot_protocol_version)."""
    return _pot.pot_protocol_version()


def abi_version() -> int:
    """ABI version of the libpot loaded at run time (pot_abi_version)."""
    return _pot.pot_abi_version()


#: Bytes of a digest (32).
DIGEST_SIZE: int = _pot.pot_digest_size()
#: Bytes per chunk leaf of a tensor digest (65536).
CHUNK_SIZE: int = _pot.pot_chunk_size()
#: The longest tensor name accepted, in UTF-8 bytes.
MAX_NAME_BYTES: int = _pot.pot_max_name_bytes()
#: The largest tensor rank accepted.
MAX_DIMS: int = _pot.pot_max_dims()
#: Bytes of a step leaf (60).
STEP_LEAF_SIZE: int = _pot.pot_step_leaf_size()
#: The most challenges one derivation draws.
MAX_CHALLENGE_ROUNDS: int = _pot.pot_max_challenge_rounds()
#: The longest beacon accepted, in bytes.
MAX_BEACON_BYTES: int = _pot.pot_max_beacon_bytes()
#: Bytes of a fresh witness salt.
WITNESS_SALT_SIZE: int = _pot.POT_WITNESS_SALT_SIZE
#: The longest JSON text accepted (Spec.from_json, Commitment.from_json,
#: Ledger.apply): LimitError beyond.
MAX_JSON_BYTES: int = _pot.POT_MAX_JSON_BYTES


class Digest(bytes):
    """A 32-byte digest (SHA-256 based, docs/PROTOCOL.md).

    A bytes subclass: it compares equal to the same 32 bytes and goes
    wherever a buffer does. str() gives the 64 lower-case hex characters.

    >>> d = Digest("00" * 32)
    >>> str(d) == "0" * 64, d == bytes(32)
    (True, True)
    """

    __slots__ = ()

    def __new__(cls, value: Union[str, bytes, bytearray, memoryview, Any]) -> "Digest":
        if isinstance(value, str):
            return cls.from_hex(value)
        raw = bytes(memoryview(value))
        if len(raw) != DIGEST_SIZE:
            raise InvalidArgumentError(f"a digest is {DIGEST_SIZE} bytes, got {len(raw)}")
        return super().__new__(cls, raw)

    @classmethod
    def from_hex(cls, text: str) -> "Digest":
        """Parses exactly 64 hex characters, either case (pot_digest_from_hex);
        MalformedError otherwise."""
        return _digest(_pot.pot_digest_from_hex(text))

    def __str__(self) -> str:
        return self.hex()

    def __repr__(self) -> str:
        return f"Digest('{self.hex()}')"

    def __format__(self, spec: str) -> str:
        return format(self.hex(), spec)


def _digest(raw: bytes) -> Digest:
    return bytes.__new__(Digest, raw)


def digest_to_hex(d: Any) -> str:
    """pot_digest_to_hex: the 64 lower-case hex characters of a 32-byte digest."""
    return _pot.pot_digest_to_hex(d)


def status_name(code: int) -> str:
    """pot_status_name of the loaded library ("POT_E_MALFORMED", "POT_E_UNKNOWN")."""
    return _pot.pot_status_name(int(code))


def join_proof(hashes: Iterable[Any]) -> bytes:
    """Concatenates 32-byte hashes into proof bytes (RFC 6962 order, deepest first)."""
    out = bytearray()
    for h in hashes:
        b = bytes(memoryview(h))
        if len(b) != DIGEST_SIZE:
            raise InvalidArgumentError(f"a proof hash is {DIGEST_SIZE} bytes, got {len(b)}")
        out += b
    return bytes(out)


def split_proof(proof: Any) -> List[Digest]:
    """The hashes of proof bytes; MalformedError unless a multiple of 32 bytes."""
    b = bytes(memoryview(proof))
    if len(b) % DIGEST_SIZE:
        raise MalformedError(f"proof of {len(b)} bytes is not a whole number of {DIGEST_SIZE}-byte hashes")
    return [_digest(b[i:i + DIGEST_SIZE]) for i in range(0, len(b), DIGEST_SIZE)]
