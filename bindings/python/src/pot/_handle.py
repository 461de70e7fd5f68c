"""The base of the classes that own a libpot handle."""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Callable, ClassVar, Iterator, Optional, Type, TypeVar

from ._errors import StateError

H = TypeVar("H", bound="Handle")


class _RWLock:
    """Many readers or one writer, first come first served for writers (so a
    close() is not starved by threads that keep calling)."""

    __slots__ = ("_cond", "_readers", "_writer", "_next", "_serving")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._next = 0  # the next writer's ticket
        self._serving = 0  # the ticket whose turn it is

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            # Waiting writers go first.
            while self._writer or self._next != self._serving:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            ticket = self._next
            self._next += 1
            while self._writer or self._readers or self._serving != ticket:
                self._cond.wait()
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._serving += 1
                self._cond.notify_all()


class Handle:
    """Owns one libpot handle (a pot._pot proxy).

    pot.h lets distinct handles be used from distinct threads but one handle
    by one thread at a time, so every call takes the handle's lock (the GIL
    is released during the C call). Handles that pot.h documents as
    read-only (Safetensors, Spec, Commitment, and the reads of Tree) let
    reads run at once.

    close() frees the handle (and is idempotent); a method called after it
    raises StateError. A handle that is never closed is freed when it is
    garbage collected, or at interpreter exit (a weakref.finalize, the
    safety net). Handles are context managers.
    """

    _free: ClassVar[Callable[[Any], None]]
    _shared_reads: ClassVar[bool] = False

    def __init__(self, h: Any) -> None:
        self._h: Any = h
        self._rw = _RWLock()
        self._finalizer = weakref.finalize(self, self._finalize, h)

    @classmethod
    def _finalize(cls, h: Any) -> None:
        """Frees h (called once: by close(), garbage collection or exit)."""
        cls._free(h)

    @contextmanager
    def _use(self) -> Iterator[Any]:
        """The handle, for a call that needs it alone."""
        with self._rw.write():
            if self._h is None:
                raise StateError(f"{type(self).__name__} is closed")
            yield self._h

    @contextmanager
    def _read(self) -> Iterator[Any]:
        """The handle, for a read that pot.h allows concurrently."""
        if not self._shared_reads:
            with self._use() as h:
                yield h
            return
        with self._rw.read():
            if self._h is None:
                raise StateError(f"{type(self).__name__} is closed")
            yield self._h

    def close(self) -> None:
        """Frees the handle. Calling it again does nothing."""
        with self._rw.write():
            if self._h is None:
                return
            self._h = None
        self._finalizer()

    @property
    def closed(self) -> bool:
        """True once close() was called."""
        return self._h is None

    def __enter__(self: H) -> H:
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def _describe(self) -> str:
        return ""

    def __repr__(self) -> str:
        if getattr(self, "_h", None) is None:  # closed, or its constructor failed
            return f"<pot.{type(self).__name__} closed>"
        try:
            desc = self._describe()
        except Exception:  # a repr must not raise
            desc = ""
        return f"<pot.{type(self).__name__}{' ' + desc if desc else ''}>"


def _new(cls: Type[H], h: Any) -> H:
    """An instance of cls owning h, without running cls.__init__."""
    obj = cls.__new__(cls)
    Handle.__init__(obj, h)
    return obj
