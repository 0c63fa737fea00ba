"""byocc.cli: the command-line interface (click + rich). Imports every layer; nothing imports it.

One module per command (``show``, ``check``, ``partition``), the group and its error
boundary in ``main``; library layers are imported inside the commands so that
``byocc --help`` starts fast.
"""

from .main import cli, main

__all__ = ["cli", "main"]
