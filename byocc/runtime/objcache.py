"""The object cache of ``byocc build``: a compiler launcher.

``python -m byocc.runtime.objcache --cache-dir D [--salt K=V]... [--launcher CMD] -- nvcc ...
-c SRC -o OBJ`` looks up the entry ``D/obj/<key>.o`` and, when it passes its check, copies
the object it holds to ``OBJ``; on a miss it runs ``[CMD...] nvcc ...`` (the launcher, e.g.
``ccache``, goes inside the cache) and stores the object. Because it is a prefix of the compile command (``$launcher`` in
``config.ninja``), it works the same under ninja, under ``byocc build``'s process pool and
for a hand-run ``ninja``.

Key: sha256 over the compile arguments (output and input paths replaced by placeholders),
the text of ``SRC`` and of every header it includes from the build folder (transitively;
system and CUTLASS headers are covered by the salts and the compiler's identity), the
salts (byocc's codegen version, the CUTLASS version) and ``nvcc --version`` (memoised on
disk per compiler path, size and mtime).

An entry is one file: a header line ``byocc-obj 1 <sha256 of the object> <size>`` and the
object's bytes. It is written through a temporary name and ``os.replace``, so concurrent
builds sharing a cache never see half an entry, and checked on every read: an entry that
fails its check (truncated by a full disk, a killed copy, a network drive) is removed, the
unit is compiled again and the entry rewritten. That is said once per entry: as a line
``rejected OBJ`` in the log below, or on stderr when there is no log.

When ``$BYOCC_OBJCACHE_LOG`` names a file, one line ``hit OBJ``, ``miss OBJ`` or
``rejected OBJ`` (followed by ``miss OBJ``) is appended per compile (``byocc build`` counts
them).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

KEY_VERSION = "byocc-objcache-2"
ENTRY_MAGIC = b"byocc-obj 1"


def current_umask() -> int:
    """The process umask, read at call time (it can change after import)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\r\n]+)[">]', re.M)


@dataclass(frozen=True)
class Invocation:
    """A parsed launcher command line."""

    cache_dir: str | None
    salts: tuple[str, ...]
    launcher: tuple[str, ...]
    command: tuple[str, ...]  # the compiler and its arguments
    source: str
    output: str


def parse_invocation(argv: Sequence[str]) -> Invocation:
    """Split ``[options] -- compiler args...``; ValueError on a malformed line."""
    args = list(argv)
    if "--" not in args:
        raise ValueError("expected `--` before the compile command")
    split = args.index("--")
    opts, command = args[:split], args[split + 1:]
    cache_dir: str | None = None
    salts: list[str] = []
    launcher: list[str] = []
    i = 0
    while i < len(opts):
        opt = opts[i]
        if opt in ("--cache-dir", "--salt", "--launcher") and i + 1 < len(opts):
            value = opts[i + 1]
            if opt == "--cache-dir":
                cache_dir = value
            elif opt == "--salt":
                salts.append(value)
            else:
                launcher += shlex.split(value)
            i += 2
            continue
        raise ValueError(f"unknown option {opt!r}")
    if not command:
        raise ValueError("empty compile command")
    source = output = ""
    for j, word in enumerate(command[:-1]):
        if word == "-o":
            output = command[j + 1]
        elif word == "-c":
            source = command[j + 1]
    if not source or not output:
        raise ValueError("the compile command needs `-c SRC` and `-o OBJ`")
    return Invocation(cache_dir, tuple(salts), tuple(launcher), tuple(command), source, output)


def included_files(source: str, include_dirs: Sequence[str], root: str = ".") -> list[str]:
    """Files under ``root`` that ``source`` includes, transitively, sorted (quoted includes
    resolve next to the including file first, then in ``include_dirs``)."""
    root_abs = os.path.realpath(root)
    seen: dict[str, None] = {}
    stack = [source]
    while stack:
        cur = stack.pop()
        try:
            text = Path(cur).read_bytes()
        except OSError:
            continue
        for quote, name in _INCLUDE.findall(text):
            bases = ([os.path.dirname(cur)] if quote == b'"' else []) + list(include_dirs)
            for base in bases:
                cand = os.path.normpath(os.path.join(base, name.decode("utf-8", "replace")))
                if os.path.isfile(cand):
                    real = os.path.realpath(cand)
                    if real.startswith(root_abs + os.sep) and cand not in seen and cand != source:
                        seen[cand] = None
                        stack.append(cand)
                    break
    return sorted(seen)


def compiler_identity(compiler: str, cache_dir: str | None) -> bytes:
    """``<compiler> --version``, memoised in ``cache_dir/tools`` by path, size and mtime."""
    path = shutil.which(compiler) or compiler
    try:
        st = os.stat(path)
        stamp = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        stamp = path
    memo = None
    if cache_dir is not None:
        memo = Path(cache_dir) / "tools" / (hashlib.sha256(stamp.encode()).hexdigest() + ".txt")
        try:
            return memo.read_bytes()
        except OSError:
            pass
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, check=False, timeout=60)
        ident = proc.stdout + proc.stderr
    except (OSError, subprocess.SubprocessError):
        ident = stamp.encode()
    if memo is not None:
        atomic_write(memo, ident)
    return ident


def cache_key(inv: Invocation, identity: bytes) -> str:
    """The sha256 (hex) naming the object ``inv`` produces."""
    h = hashlib.sha256()

    def put(tag: str, data: bytes) -> None:
        h.update(f"{tag}:{len(data)}:".encode())
        h.update(data)

    put("version", KEY_VERSION.encode())
    for salt in sorted(inv.salts):
        put("salt", salt.encode())
    put("compiler", identity)
    words = inv.command[1:]
    for j, word in enumerate(words):
        if j > 0 and words[j - 1] == "-o":
            word = "<out>"
        elif j > 0 and words[j - 1] == "-c":
            word = "<in>"
        put("arg", word.encode())
    put("source", Path(inv.source).read_bytes())
    for dep in included_files(inv.source, _include_dirs(inv.command)):
        put("header", dep.encode())
        put("text", Path(dep).read_bytes())
    return h.hexdigest()


def _include_dirs(command: Sequence[str]) -> list[str]:
    dirs = []
    for j, word in enumerate(command):
        if word.startswith("-I") and len(word) > 2:
            dirs.append(word[2:])
        elif word in ("-I", "--include-path") and j + 1 < len(command):
            dirs.append(command[j + 1])
    return dirs


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file and ``os.replace``: readers see the old
    or the new bytes, never a part. A symlink is written through (its target is replaced);
    an existing file keeps its mode, a new one gets the umask's (not mkstemp's 0600)."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def pack_entry(data: bytes) -> bytes:
    """A cache entry holding object ``data``: the header line, then the bytes."""
    digest = hashlib.sha256(data).hexdigest()
    return ENTRY_MAGIC + f" {digest} {len(data)}\n".encode() + data


def unpack_entry(entry: bytes) -> bytes | None:
    """The object an entry holds, or None when the entry fails its check."""
    header, newline, data = entry.partition(b"\n")
    words = header.split(b" ")
    if not newline or len(words) != 4 or b" ".join(words[:2]) != ENTRY_MAGIC:
        return None
    digest, size = words[2].decode("ascii", "replace"), words[3]
    if not size.isdigit() or int(size) != len(data) or hashlib.sha256(data).hexdigest() != digest:
        return None
    return data


def _log(event: str, output: str) -> None:
    log = os.environ.get("BYOCC_OBJCACHE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{event} {output}\n")
    elif event == "rejected":
        sys.stderr.write(f"byocc: the cached object for {output} failed its check; compiling it again\n")


def _serve(entry_path: Path, output: str) -> bool:
    """Copy the object of a checked entry to ``output``; False on a miss or a bad entry
    (which is removed and reported)."""
    try:
        entry = entry_path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        entry = b""
    data = unpack_entry(entry)
    if data is None:
        _log("rejected", output)
        with contextlib.suppress(OSError):
            entry_path.unlink()
        return False
    try:
        atomic_write(output, data)
    except OSError:
        return False
    return True


def run(argv: Sequence[str]) -> int:
    """Run one launcher invocation; the compiler's exit status."""
    try:
        inv = parse_invocation(argv)
    except ValueError as exc:
        sys.stderr.write(f"byocc.runtime.objcache: {exc}\n")
        return 2
    full = list(inv.launcher) + list(inv.command)
    if inv.cache_dir is None or not os.path.isfile(inv.source):
        return subprocess.call(full)
    key = cache_key(inv, compiler_identity(inv.command[0], inv.cache_dir))
    entry_path = Path(inv.cache_dir) / "obj" / f"{key}.o"
    if _serve(entry_path, inv.output):
        _log("hit", inv.output)
        return 0
    rc = subprocess.call(full)
    if rc == 0 and os.path.isfile(inv.output):
        try:
            atomic_write(entry_path, pack_entry(Path(inv.output).read_bytes()))
        except OSError:
            pass  # a read-only or full cache never fails a build
    _log("miss", inv.output)
    return rc


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()


__all__ = ["Invocation", "atomic_write", "cache_key", "compiler_identity", "included_files",
           "pack_entry", "parse_invocation", "run", "unpack_entry"]
