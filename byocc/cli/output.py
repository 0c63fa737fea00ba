"""Writing the CLI's products: stdout that tolerates a closed pipe, atomic files and folders.

stdout holds only the product (IR text, JSON); messages go to stderr (style.md section 9).
Files are written to a temporary name beside the target and renamed into place, so a
reader never sees half a file and a failed run leaves the old outputs as they were.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Mapping, NoReturn


class StdoutClosed(Exception):
    """The process reading our stdout has gone away (EPIPE); the command stops quietly."""


def write_stdout(text: str) -> None:
    """Write ``text`` to stdout and flush; a closed pipe raises :class:`StdoutClosed`."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()


def stdout_closed() -> NoReturn:
    """Silence stdout after EPIPE and raise :class:`StdoutClosed`."""
    _silence_stdout()
    raise StdoutClosed() from None


def _silence_stdout() -> None:
    # Point fd 1 at /dev/null so the interpreter's final flush cannot raise again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (tests): nothing to do
        pass


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def use_colour(stream_is_tty: bool) -> bool:
    """Colour when writing to a terminal, unless NO_COLOR is set; FORCE_COLOR forces it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream_is_tty


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` via a temporary file and rename."""
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise


def write_tree_atomic(out_dir: Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write ``files`` (relative path -> content) into ``out_dir`` all-or-nothing.

    Everything is first written into a temporary folder beside ``out_dir``. If ``out_dir``
    does not exist the folder is renamed into place in one step; otherwise each file is
    moved in with ``os.replace`` (atomic per file) only after all of them were written.
    Returns the final paths, in the order given.
    """
    import shutil
    import tempfile

    out_dir = Path(out_dir)
    parent = out_dir.parent if str(out_dir.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".tmp", dir=parent))
    try:
        for rel, content in files.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                with open(target, "w", encoding="utf-8", newline="\n") as f:
                    f.write(content)
        if not out_dir.exists():
            os.replace(staging, out_dir)
        else:
            if not out_dir.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", str(out_dir))
            for rel in files:
                final = out_dir / rel
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return [out_dir / rel for rel in files]


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


__all__ = [
    "StdoutClosed", "stderr_is_terminal", "stdout_closed", "stdout_is_terminal", "use_colour", "write_stdout",
    "write_text_atomic", "write_tree_atomic",
]
