"""``IRBuilder`` and its frames: TVM's ``tvm.script.ir_builder.base``, over byocc's IR.

An :class:`IRBuilder` is a context manager holding a stack of frames. Each frame is a
context manager too (``with relax_builder.function():``); entering pushes it onto the
innermost builder, leaving pops it and hands what it built to the frame below, or, for
the outermost frame, makes it the builder's result, returned by :meth:`IRBuilder.get`::

    with IRBuilder() as builder:
        with relax_builder.function():
            ...
    func = builder.get()
"""

from __future__ import annotations

import threading
from typing import Any

from byocc.ir import InputError

_LOCAL = threading.local()  # per thread, as TVM's builder stack


def _stack() -> list[IRBuilder]:
    stack = getattr(_LOCAL, "builders", None)
    if stack is None:
        stack = _LOCAL.builders = []
    return stack


class IRBuilderFrame:
    """One scope of an :class:`IRBuilder`; subclasses implement :meth:`finish`."""

    def __init__(self) -> None:
        self._builder: IRBuilder | None = None

    def __enter__(self) -> IRBuilderFrame:  # noqa: PYI034  (Self needs Python 3.11)
        builder = IRBuilder.current()
        builder._frames.append(self)
        self._builder = builder
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        builder = self._builder
        assert builder is not None and builder._frames and builder._frames[-1] is self
        builder._frames.pop()
        if exc_type is not None:
            return
        result = self.finish()
        if result is None:
            return
        if builder._frames:
            builder._frames[-1].add_child_result(self, result)
        else:
            builder._result = result

    def finish(self) -> Any:
        """What this frame built (called on leaving it without an exception); None for a
        frame that only adds to the one around it (a dataflow block)."""
        return None

    def add_child_result(self, child: IRBuilderFrame, result: Any) -> None:
        """Take what a frame nested in this one built; by default nothing may nest here."""
        raise InputError(f"{type(child).__name__} cannot be nested in {type(self).__name__}")


class IRBuilder:
    """TVM's ``IRBuilder``: ``with IRBuilder() as b: ...``, then ``b.get()``."""

    def __init__(self) -> None:
        self._frames: list[IRBuilderFrame] = []
        self._result: Any = None

    def __enter__(self) -> IRBuilder:  # noqa: PYI034  (Self needs Python 3.11)
        _stack().append(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        stack = _stack()
        if stack and stack[-1] is self:
            stack.pop()

    @staticmethod
    def current() -> IRBuilder:
        """The innermost builder in scope; an error when there is none."""
        stack = _stack()
        if not stack:
            raise InputError("no IRBuilder in scope: use `with IRBuilder() as builder:` first")
        return stack[-1]

    @staticmethod
    def is_in_scope() -> bool:
        """Whether a builder is in scope."""
        return bool(_stack())

    def get(self) -> Any:
        """What the outermost frame built (a Function or an IRModule)."""
        if self._result is None:
            raise InputError("the IRBuilder has no result yet: the outermost frame "
                             "(e.g. `with relax_builder.function():`) must be closed first")
        return self._result

    @staticmethod
    def name(s: str, v: Any) -> Any:
        """Name the variable ``v`` (a parameter or an emitted variable) ``s`` in what the
        innermost frame that holds variables builds; returns ``v``."""
        if not isinstance(s, str) or not s:
            raise InputError(f"IRBuilder.name: the name must be a non-empty string, got {s!r}")
        for frame in reversed(IRBuilder.current()._frames):
            rename = getattr(frame, "rename", None)
            if rename is not None:
                rename(v, s)
                return v
        raise InputError("IRBuilder.name must be called inside a frame that builds variables "
                         "(e.g. relax_builder.function())")

    @staticmethod
    def name_many(s: Any, vs: Any) -> Any:
        """:meth:`name` for each pair of ``s`` and ``vs``; returns ``vs``."""
        s, vs = list(s), list(vs)
        if len(s) != len(vs):
            raise InputError(f"IRBuilder.name_many: {len(s)} names for {len(vs)} values")
        for name, value in zip(s, vs):
            IRBuilder.name(name, value)
        return vs

    def find_frame(self, kind: type) -> Any:
        """The innermost frame that is a ``kind``, or None."""
        for frame in reversed(self._frames):
            if isinstance(frame, kind):
                return frame
        return None


__all__ = ["IRBuilder", "IRBuilderFrame"]
