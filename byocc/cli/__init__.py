"""byocc.cli: the command-line interface (click + rich). Imports every layer; nothing imports it.

One module per command (``show``, ``check``, ``partition``, ``build``, ``run``, ``verify``,
``import_``), the group and its error boundary in ``main``, shared options in ``options``,
the one writer of outputs and consoles in ``output``; library layers are imported inside
the commands so that ``byocc --help`` starts fast.
"""

from .main import cli
from .main import main

__all__ = ["cli", "main"]
