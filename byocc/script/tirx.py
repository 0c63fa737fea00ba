"""``from byocc.script import tirx as T``: ``T.int64``, ``T.float32``... in annotations.

Every attribute is a placeholder: Python evaluates it while defining a decorated def, and
the parser reads the real meaning from the source text."""

from __future__ import annotations

from ._source import Placeholder


def __getattr__(name: str) -> Placeholder:
    if name.startswith("__"):
        raise AttributeError(name)
    return Placeholder(f"T.{name}")
