"""byocc.text: the Relax text format, as Apache TVM 0.27 prints it (docs/textual-ir.md).

Facade: ``parse_module``, ``read_file`` (parser) and ``print_module``, ``print_function``,
``print_expr`` (printer). Names load on first use, so printing never imports Lark and
importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:  # what __getattr__ loads on first use
    from .parser import decode_source
    from .parser import parse_module
    from .parser import parse_script
    from .parser import read_file
    from .printer import constant_arrays
    from .printer import print_expr
    from .printer import print_function
    from .printer import print_module
    from .printer import print_module_with_metadata

__all__ = ["constant_arrays", "decode_source", "parse_module", "parse_script", "print_expr", "print_function", "print_module",
           "print_module_with_metadata", "read_file"]

_HOME = {
    "decode_source": "parser",
    "parse_module": "parser",
    "parse_script": "parser",
    "read_file": "parser",
    "print_module": "printer",
    "print_function": "printer",
    "print_expr": "printer",
    "print_module_with_metadata": "printer",
    "constant_arrays": "printer",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'byocc.text' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
