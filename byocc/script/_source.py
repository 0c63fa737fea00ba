"""Reading a decorated class's or function's source back and parsing it (byocc.text)."""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

from byocc.ir import InputError, IRModule


def source_of(obj: Any, what: str) -> tuple[str, str]:
    """``(text, file name)`` of ``obj``'s definition, decorators included, dedented and
    preceded by blank lines so that line numbers in errors are the file's."""
    try:
        lines, start = inspect.getsourcelines(obj)
        filename = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as e:
        raise InputError(f"{what}: cannot read the source of {getattr(obj, '__qualname__', obj)!r} "
                         f"({e}); define it in a file, or use byocc.script.from_source(text)") from None
    text = textwrap.dedent("".join(lines))
    return "\n" * max(start - 1, 0) + text, filename


def parse_source(obj: Any, what: str) -> IRModule:
    from byocc.text import parse_module

    text, filename = source_of(obj, what)
    return parse_module(text, filename)


class Placeholder:
    """What an annotation such as ``R.Tensor((10, 10), "float32")`` evaluates to while Python
    defines the decorated function; the parser reads the annotation from the source."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> "Placeholder":
        return self

    def __getattr__(self, name: str) -> "Placeholder":
        if name.startswith("__"):
            raise AttributeError(name)
        return Placeholder(f"{self.name}.{name}")

    def __getitem__(self, item: Any) -> "Placeholder":
        return self

    def __repr__(self) -> str:
        return f"<annotation {self.name}>"


__all__ = ["Placeholder", "parse_source", "source_of"]
