"""Writing the CLI's products: stdout that tolerates a closed pipe, and the one writer of
every output file and folder.

stdout holds only the product (IR text, JSON); messages go to stderr (docs/architecture.md#standard-streams-and-output-files).
Every output goes through :func:`write_file` or :func:`write_tree_atomic`:

- ``-`` is stdout;
- a symlink is written through, to its target (atomically, beside the target);
- a special file (``/dev/stdout``, a fifo, a terminal; anything reached through
  ``/proc`` or ``/dev/fd``) is opened and written directly;
- a regular file is written to a temporary name beside it and renamed into place, so a
  reader never sees half a file and a failed run leaves the old output as it was; a new
  file gets the umask's permissions, a replaced one keeps its mode;
- an output that is the same file (same inode) as an input the command read is refused
  (:func:`note_input` records the inputs), and destinations are checked before the work
  (:func:`check_output_file`, :func:`check_output_dir`);
- a destination that cannot be written is a usage error (exit code 2), whether found
  before the work (click's ``BadParameter``; nothing in ``/proc``, ``/dev/fd`` or ``/sys``
  can be created) or when the write fails (:class:`OutputError`);
- errors name the user's path, never a temporary file;
- an output folder (``partition -o DIR``, :func:`write_output_folder`) is byocc's: its
  manifest lists every file the run wrote (``files``), and a re-run removes the listed
  files it does not write again, never anything else.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn


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
    """Colour when writing to a terminal, unless NO_COLOR is set; FORCE_COLOR forces it.
    The one colour rule: every console (:func:`console`) and diagnostic follows it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream_is_tty


def console(stderr: bool = False, tty: bool | None = None, **options):
    """A rich console on stdout (or stderr) with colour by :func:`use_colour` (``tty``: whether
    the stream is a terminal, found out when None); markup and highlighting are off, so IR's
    ``[...]`` is never read as markup (docs/architecture.md#standard-streams-and-output-files). ``options`` go to
    ``rich.console.Console`` (``soft_wrap``, ``width``, ...)."""
    from rich.console import Console

    if tty is None:
        tty = stderr_is_terminal() if stderr else stdout_is_terminal()
    colour = use_colour(tty)
    return Console(stderr=stderr, markup=False, highlight=False, no_color=not colour,
                   force_terminal=colour or None, **options)


def render_table(title: str, columns: list[str], rows: list[list[str]], stderr: bool = False,
                 left: frozenset[str] = frozenset({"output", "dtype", "status", "shape"})) -> None:
    """A table with a title: drawn by rich on a terminal (or off one when FORCE_COLOR asks
    for colour), else plain columns padded with spaces. ``left``: left-justified columns
    (the others are numbers, right-justified)."""
    tty = stderr_is_terminal() if stderr else stdout_is_terminal()
    if tty or use_colour(tty):
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for c in columns:
            table.add_column(c, justify="left" if c in left else "right")
        for r in rows:
            table.add_row(*r)
        console(stderr, tty).print(table)
        return
    import click

    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    lines = [title, "  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    click.echo("\n".join(lines), err=stderr)


def warn_dropped_constants(count: int, keep: str = "-o DIR") -> None:
    """stdout carries text only: say on stderr that ``count`` tensor constant values are not
    in the module text printed there, and which option keeps them (a sidecar ``.npz``)."""
    if count:
        import click

        click.echo(f"warning: the values of {count} tensor constant{'s' if count != 1 else ''} are "
                   "not written to stdout (the text refers to them as metadata[...]); use "
                   f"{keep} to keep them in a sidecar .npz", err=True)


# --------------------------------------------------------------------------- inputs
def _registry() -> dict[tuple[int, int], str]:
    """(device, inode) -> the name the user gave, of every input file this command read."""
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return _NO_CONTEXT_INPUTS
    return ctx.find_root().meta.setdefault("byocc.inputs", {})


_NO_CONTEXT_INPUTS: dict[tuple[int, int], str] = {}


def note_input(path: str | os.PathLike[str]) -> None:
    """Record ``path`` (``-``: stdin, when it is a file) as an input; outputs may not be it."""
    try:
        st = os.fstat(sys.stdin.fileno()) if str(path) == "-" else os.stat(path)
    except (OSError, ValueError, AttributeError):
        return  # not there (yet) or no descriptor: nothing can be overwritten
    if str(path) == "-" and not stat.S_ISREG(st.st_mode):
        return
    _registry()[(st.st_dev, st.st_ino)] = "stdin" if str(path) == "-" else str(path)


def note_model_input(path: str) -> None:
    """Record a MODEL argument and, for a ``.relax`` file, its sidecar ``<stem>.npz``."""
    note_input(path)
    if path != "-":
        p = Path(path)
        note_input(p.with_name(p.stem + ".npz"))


def _same_input(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _registry().get((st.st_dev, st.st_ino))


# --------------------------------------------------------------------------- destinations
class OutputRefused(Exception):
    """An output destination that cannot or must not be written (a usage error, exit 2).

    The CLI turns it into click's ``BadParameter`` for the option that named it."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path!r}: {reason}")
        self.path = path
        self.reason = reason


class OutputError(OSError):
    """Writing an output failed (a full disk, a folder removed meanwhile, ...): the output
    location the user gave cannot be used, a usage error like :class:`OutputRefused`
    (``exit_code`` 2, read by the CLI's error boundary). ``filename`` is the user's path."""

    exit_code = 2


def check_output_file(path: str | None, option: str = "-o") -> None:
    """Check before any work that ``path`` can be written as a file; usage error if not."""
    import click

    if path is None:
        return
    try:
        _check_file(str(path))
    except OutputRefused as err:
        raise click.BadParameter(f"cannot write {err.path!r}: {err.reason}", param_hint=f"'{option}'") from None


def check_output_dir(path: str | None, option: str = "-o") -> None:
    """Check before any work that ``path`` can be (created and) filled as a folder."""
    import click

    if path is None:
        return
    try:
        _check_dir(str(path))
    except OutputRefused as err:
        raise click.BadParameter(f"cannot write {err.path!r}: {err.reason}", param_hint=f"'{option}'") from None


def _check_file(path: str) -> None:
    if path == "-":
        return
    if path == "":
        raise OutputRefused(path, "empty file name")
    clash = _same_input(path)
    if clash is not None:
        raise OutputRefused(path, f"it is the input {clash!r}, which byocc never overwrites")
    target, special = _resolve(path)
    if os.path.isdir(target):
        raise OutputRefused(path, "is a folder")
    if special and not os.path.lexists(target):
        raise OutputRefused(path, f"no such file, and none can be created in {_virtual_root(target)}")
    if special or (os.path.exists(target) and not os.path.isfile(target)):
        if os.path.exists(target) and not os.access(target, os.W_OK):
            raise OutputRefused(path, "permission denied")
        return
    _check_parent(path, os.path.dirname(target) or ".")


def _check_parent(path: str, parent: str) -> None:
    if not os.path.exists(parent):
        raise OutputRefused(path, f"no folder {_shown(path, parent)!r}")
    if not os.path.isdir(parent):
        raise OutputRefused(path, f"{_shown(path, parent)!r} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputRefused(path, f"permission denied in folder {_shown(path, parent)!r}")


def _shown(path: str, parent: str) -> str:
    """``parent`` as the user spelt it when it is the parent of what they wrote."""
    given = os.path.dirname(path)
    if given and os.path.abspath(given) == os.path.abspath(parent):
        return given
    return parent if given else (parent if parent != "." else ".")


def _check_dir(path: str) -> None:
    if path in ("", "-"):
        raise OutputRefused(path, "an output folder needs a name")
    target, special = _resolve(path)
    if os.path.exists(target):
        if not os.path.isdir(target):
            raise OutputRefused(path, "exists and is not a folder")
        if not os.access(target, os.W_OK | os.X_OK):
            raise OutputRefused(path, "permission denied")
        return
    if special:
        raise OutputRefused(path, f"no such folder, and none can be created in {_virtual_root(target)}")
    # created with its parents: the nearest existing ancestor must be a writable folder
    ancestor = os.path.dirname(os.path.abspath(target))
    while not os.path.exists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise OutputRefused(path, f"{ancestor!r} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputRefused(path, f"permission denied in folder {ancestor!r}")


#: File systems of the kernel: their files are written in place, none can be created.
_VIRTUAL = ("/proc", "/dev/fd", "/sys")


def _virtual_root(path: str) -> str:
    """The kernel file system ``path`` is in (``/proc``, ``/dev/fd``, ``/sys``), or ''."""
    absolute = os.path.abspath(path)
    return next((root for root in _VIRTUAL if absolute.startswith(root + "/")), "")


def _resolve(path: str) -> tuple[str, bool]:
    """The file a write to ``path`` lands in, following symlinks (also dangling ones);
    ``special`` when a hop goes through a kernel file system (``/proc``, ``/dev/fd`` as
    ``/dev/stdout`` does, ``/sys``), where renaming would not reach the file the link means."""
    current = path
    for _ in range(40):
        if _virtual_root(current):
            return current, True
        if not os.path.islink(current):
            return current, False
        link = os.readlink(current)
        current = link if os.path.isabs(link) else os.path.join(os.path.dirname(current), link)
    return current, True  # a symlink loop: let open() report it


# --------------------------------------------------------------------------- writing
def write_file(path: str | os.PathLike[str], content: str | bytes) -> None:
    """Write ``content`` (text as UTF-8 with ``\n`` line ends) to ``path`` (``-``: stdout),
    by the rules in this module's docstring. OSErrors name ``path``."""
    path = str(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    if path == "-" or _is_our_stdout(path):
        write_stdout_bytes(data)  # also /dev/stdout: a second open would truncate a redirect
        return
    try:
        _check_file(path)
    except OutputRefused as err:
        import click

        raise click.UsageError(f"cannot write {err.path!r}: {err.reason}") from None
    target, special = _resolve(path)
    try:
        if special or (os.path.exists(target) and not os.path.isfile(target)):
            with open(target, "wb") as f:
                f.write(data)
            return
        _replace_atomically(target, data)
    except OSError as err:
        raise OutputError(err.errno, f"cannot write: {err.strerror or err}", path) from None


def _is_our_stdout(path: str) -> bool:
    try:
        st, out = os.stat(path), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino)


def _replace_atomically(target: str, data: bytes) -> None:
    """Atomic replace keeping an existing file's mode: the one implementation is
    :func:`byocc.runtime.objcache.atomic_write` (also used for build files and cache objects)."""
    from byocc.runtime.objcache import atomic_write

    atomic_write(target, data)


def write_npz(path: str, arrays: Mapping) -> None:
    """Write ``arrays`` (name -> array) as an ``.npz`` to ``path`` through :func:`write_file`."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_file(path, buffer.getvalue())


def write_stdout_bytes(data: bytes) -> None:
    """Write ``data`` to stdout's binary buffer and flush; EPIPE raises :class:`StdoutClosed`."""
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:
            sys.stdout.write(data.decode("utf-8", errors="replace"))
            sys.stdout.flush()
        else:
            sys.stdout.flush()
            buffer.write(data)
            buffer.flush()
    except BrokenPipeError:
        stdout_closed()


def write_tree_atomic(out_dir: Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write ``files`` (relative path -> content) into ``out_dir`` all-or-nothing.

    Everything is first written into a temporary folder beside ``out_dir`` (beside its
    target, when ``out_dir`` is a symlink). If ``out_dir`` does not exist the folder gets
    the umask's permissions and is renamed into place in one step; otherwise each file is
    moved in with ``os.replace`` (atomic per file) only after all of them were written; a
    file there that is a symlink is written through. A file that is one of the command's
    inputs is refused before anything is written. Returns the final paths, in the order
    given; OSErrors name ``out_dir`` or the file in it, never the temporary folder.
    """
    import shutil
    import tempfile

    import click

    given = Path(out_dir)
    try:
        _check_dir(str(given))
        for rel in files:
            clash = _same_input(str(given / rel))
            if clash is not None:
                raise OutputRefused(str(given / rel), f"it is the input {clash!r}, which byocc never overwrites")
    except OutputRefused as err:
        raise click.UsageError(f"cannot write {err.path!r}: {err.reason}") from None
    target = Path(_resolve(str(given))[0])
    parent = target.parent if str(target.parent) else Path(".")
    staging: Path | None = None
    current = given
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent))
        for rel, content in files.items():
            current = given / rel
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        current = given
        if not target.exists():
            _chmod_tree(staging)
            os.replace(staging, target)
        else:
            for rel in files:
                current = given / rel
                final = target / rel
                if final.is_symlink():
                    write_file(str(final), (staging / rel).read_bytes())
                    continue
                final.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, final)
    except OSError as err:
        raise OutputError(err.errno, f"cannot write: {err.strerror or err}", str(current)) from None
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return [given / rel for rel in files]


# --------------------------------------------------------------------------- an output folder
#: The file of an output folder that lists what byocc wrote there, and its key.
MANIFEST = "manifest.json"
FILES_KEY = "files"


def write_output_folder(out_dir: Path, files: Mapping[str, str | bytes]) -> tuple[list[Path], list[str]]:
    """Write ``files`` into ``out_dir`` (:func:`write_tree_atomic`), list them in the
    manifest's ``files`` (every path written, relative, sorted; the manifest included),
    then remove what the previous run's manifest listed and this run did not write.

    Only files byocc listed are removed: a file put there by anyone else stays, and so do
    a listed path that is now a symlink or leads out of the folder, and one of the
    command's inputs. Folders emptied by the removal go too. Returns ``(written paths,
    removed relative paths)``; a file that cannot be removed is a warning."""
    files = _with_file_list(files)
    previous = previous_files(out_dir) if MANIFEST in files else set()
    written = write_tree_atomic(out_dir, files)
    return written, _remove_stale(Path(out_dir), sorted(previous - set(files)))


def _with_file_list(files: Mapping[str, str | bytes]) -> dict[str, str | bytes]:
    import json

    out = dict(files)
    text = out.get(MANIFEST)
    if text is None:
        return out
    manifest = json.loads(text)
    manifest[FILES_KEY] = sorted(out)
    from byocc.backends.manifest import dumps

    out[MANIFEST] = dumps(manifest)
    return out


def previous_files(out_dir: str | os.PathLike[str]) -> set[str]:
    """The relative paths ``out_dir``'s manifest lists as written by byocc; none when there
    is no manifest, it is not byocc's JSON, or it predates the list. A path that is not a
    plain relative path inside the folder (absolute, ``..``) is never taken."""
    import json

    try:
        with open(Path(out_dir) / MANIFEST, encoding="utf-8") as f:
            listed = json.load(f).get(FILES_KEY)
    except (OSError, ValueError, AttributeError):
        return set()
    if not isinstance(listed, list):
        return set()
    return {p for p in listed if isinstance(p, str) and _plain_relative(p)}


def _plain_relative(path: str) -> bool:
    from pathlib import PurePosixPath

    parts = path.split("/")
    return (bool(path) and not PurePosixPath(path).is_absolute() and "\\" not in path
            and all(part not in ("", ".", "..") for part in parts))


def _remove_stale(out_dir: Path, stale: list[str]) -> list[str]:
    import click

    root = os.path.realpath(out_dir)
    removed: list[str] = []
    for rel in stale:
        path = os.path.join(root, *rel.split("/"))
        if (os.path.islink(path) or not os.path.isfile(path) or _same_input(path) is not None
                or os.path.commonpath([root, os.path.realpath(path)]) != root):
            continue
        try:
            os.unlink(path)
        except OSError as err:
            click.echo(f"warning: cannot remove {out_dir / rel}, left by the previous run: "
                       f"{err.strerror or err}", err=True)
            continue
        removed.append(rel)
        folder = os.path.dirname(path)
        while folder != root and os.path.commonpath([root, folder]) == root:
            try:
                os.rmdir(folder)  # only an empty folder: anything else stays
            except OSError:
                break
            folder = os.path.dirname(folder)
    return removed


def _chmod_tree(root: Path) -> None:
    """Folders made by mkdtemp are 0700: give the staged folder the umask's permissions."""
    from byocc.runtime.objcache import current_umask

    os.chmod(root, 0o777 & ~current_umask())


__all__ = [
    "OutputError", "OutputRefused", "StdoutClosed", "previous_files", "check_output_dir", "check_output_file", "console", "note_input",
    "note_model_input", "render_table", "stderr_is_terminal", "stdout_closed", "stdout_is_terminal",
    "use_colour", "warn_dropped_constants", "write_file", "write_npz", "write_output_folder", "write_stdout",
    "write_stdout_bytes", "write_tree_atomic",
]
