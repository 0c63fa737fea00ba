"""Constructors that read like TVM's classes but build byocc's own IR nodes.

TVM spells ``relax.TensorStructInfo([10, 10], "float32")`` (dtype defaults to
``"float32"``) and ``relax.Var("x", ty)``; byocc's nodes are frozen dataclasses with other
defaults. A :class:`Factory` class keeps TVM's call signature, returns the byocc node, and
answers ``isinstance``/``issubclass`` for the byocc class, so
``isinstance(v, relax.Var)`` holds for every variable whatever built it.
"""

from __future__ import annotations

from typing import Any


class FactoryMeta(type):
    """Metaclass: ``isinstance(obj, F)`` is ``isinstance(obj, F.target)``."""

    target: Any

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.target)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return isinstance(sub, type) and issubclass(sub, cls.target)


class Factory(metaclass=FactoryMeta):
    """Base of the TVM-signature constructors: ``__new__`` returns a ``target`` instance."""

    target: Any = object
