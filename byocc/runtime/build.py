"""``byocc build``: compile a generated library (spec/backends.md sections 13 and 17.2).

:func:`build` reads ``DIR/manifest.json`` and ``DIR/build.ninja``, finds the tools
(nvcc; ninja, else an internal pool; CUTLASS headers and cuBLASLt only when a unit needs
them: a missing one is an :class:`~byocc.ir.ExternalToolError` naming it), rewrites
``DIR/config.ninja`` for this machine (compiler paths, the object-cache launcher, pool
depth, ``-DBYOCC_NO_SM90``/``-DBYOCC_NO_SM80`` for a one-arch build) and runs the build:

1. ninja on ``build.ninja`` (or on ``build.<arch>.ninja``, a copy without the units of the
   arch left out), ``-j max(heavy, nproc)`` with pool ``heavy`` at the heavy depth;
2. without ninja, the same commands (read from the ninja files by the small reader below)
   through a thread pool of subprocesses with the same two limits, then the link.

Every compiler message goes to ``DIR/build.log``; progress is reported through a callback
(the CLI draws it). Output: ``DIR/lib/libbyocc_<stem>.so``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED
from concurrent.futures import Future
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from byocc.ir import ExternalToolError
from byocc.ir import InputError

from .inputs import available_memory
from .objcache import atomic_write

# ============================================================== a reader for ninja files
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass
class Edge:
    """One ``build`` statement."""

    outputs: list[str]
    rule: str
    inputs: list[str]
    implicit: list[str]
    bindings: dict[str, str] = field(default_factory=dict)
    command: str = ""
    description: str = ""
    pool: str = ""


@dataclass
class NinjaFile:
    """A parsed ninja file (after its includes)."""

    variables: dict[str, str] = field(default_factory=dict)
    rules: dict[str, dict[str, str]] = field(default_factory=dict)
    pools: dict[str, int] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    defaults: list[str] = field(default_factory=list)


def _expand(text: str, lookup) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$":
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt in ("$", " ", ":"):
            out.append(nxt)
            i += 2
        elif nxt == "{":
            end = text.index("}", i)
            out.append(lookup(text[i + 2:end]))
            i = end + 1
        else:
            m = _SIMPLE_NAME.match(text, i + 1)
            if not m:
                raise InputError(f"bad $-escape in ninja text: {text[i:i + 10]!r}")
            out.append(lookup(m.group(0)))
            i = m.end()
    return "".join(out)


def _split_paths(text: str) -> list[str]:
    """Split on spaces that are not ``$``-escaped (the pieces are still unexpanded)."""
    words, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "$" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if ch == " ":
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
        i += 1
    if cur:
        words.append("".join(cur))
    return words


def _logical_lines(text: str) -> list[str]:
    lines, pending = [], ""
    for raw in text.split("\n"):
        if raw.endswith("$") and not raw.endswith("$$"):
            pending += raw[:-1]
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _colon(text: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "$":
            i += 2
            continue
        if text[i] == ":":
            return i
        i += 1
    raise InputError(f"ninja build line without ':': {text!r}")


def parse_ninja(path: str | Path, root: str | Path, into: NinjaFile | None = None) -> NinjaFile:
    """Parse ``path``; ``include``d files are looked up relative to ``root`` (the folder ninja
    runs in). A missing included file is skipped."""
    nf = into if into is not None else NinjaFile()
    lines = _logical_lines(Path(path).read_text(encoding="utf-8"))
    env = nf.variables

    def top(name: str) -> str:
        return env.get(name, "")

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[0] in " \t":
            raise InputError(f"{path}: unexpected indented line {stripped!r}")
        block: dict[str, str] = {}
        while i < len(lines) and lines[i][:1] in (" ", "\t") and lines[i].strip():
            key, _, value = lines[i].strip().partition("=")
            block[key.strip()] = value.strip()
            i += 1
        word, _, rest = stripped.partition(" ")
        if word == "include" or word == "subninja":
            inc = Path(root) / _expand(rest.strip(), top)
            if inc.is_file():
                parse_ninja(inc, root, nf)
        elif word == "rule":
            nf.rules[rest.strip()] = block
        elif word == "pool":
            nf.pools[rest.strip()] = int(_expand(block.get("depth", "1"), top) or "1")
        elif word == "default":
            nf.defaults += [_expand(p, top) for p in _split_paths(rest.strip())]
        elif word == "build":
            c = _colon(rest)
            outs = [_expand(p, top) for p in _split_paths(rest[:c].strip()) if p != "|"]
            parts = _split_paths(rest[c + 1:].strip())
            rule, ins, implicit, mode = parts[0], [], [], 0
            for p in parts[1:]:
                if p in ("|", "||"):
                    mode = 1 if p == "|" else 2
                    continue
                (ins if mode == 0 else implicit).append(_expand(p, top))
            edge = Edge(outs, rule, ins, implicit, {k: _expand(v, top) for k, v in block.items()})
            nf.edges.append(edge)
        else:
            m = _NAME.fullmatch(stripped.partition("=")[0].strip())
            if "=" not in stripped or not m:
                raise InputError(f"{path}: cannot read ninja line {stripped!r}")
            key, _, value = stripped.partition("=")
            env[key.strip()] = _expand(value.strip(), top)
    if into is None:
        for edge in nf.edges:
            _resolve(nf, edge)
    return nf


def _resolve(nf: NinjaFile, edge: Edge) -> None:
    if edge.rule == "phony":
        return
    rule = nf.rules.get(edge.rule)
    if rule is None:
        raise InputError(f"ninja edge for {edge.outputs} uses unknown rule {edge.rule!r}")

    def lookup(name: str, depth: int = 0) -> str:
        if name == "in":
            return " ".join(shlex.quote(p) for p in edge.inputs)
        if name == "out":
            return " ".join(shlex.quote(p) for p in edge.outputs)
        if name in edge.bindings:
            return edge.bindings[name]
        if name in rule and depth < 16:
            return _expand(rule[name], lambda n: lookup(n, depth + 1))
        return nf.variables.get(name, "")

    edge.command = lookup("command")
    edge.description = lookup("description") if "description" in rule else edge.command
    edge.pool = lookup("pool") if "pool" in rule or "pool" in edge.bindings else ""



# ================================================================== the build itself
NINJA_STATUS_PREFIX = "[byocc "
_STATUS = re.compile(r"^\[byocc (\d+)/(\d+) (\d+)\] (.*)$")
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(.*?)\s*$")
ARCHS = ("sm_90a", "sm_80")


@dataclass(frozen=True)
class Progress:
    """One progress report: ``done`` of ``total`` steps finished, ``current`` the step just
    reported (``light src/funcs/f.cu``, ``link lib/...``)."""

    done: int
    total: int
    current: str
    running: int = 0  # steps still running (ninja's %r; the pool's own count)


@dataclass
class BuildResult:
    """What :func:`build` did."""

    library: Path
    units: int  # compile steps run this time (ninja skips the up-to-date ones)
    cache_hits: int
    used_ninja: bool
    heavy_depth: int
    jobs: int
    skipped_kinds: tuple[str, ...]
    log: Path
    seconds: float = 0.0
    defines: tuple[str, ...] = field(default_factory=tuple)


def build(directory: str | Path, *, archs: Sequence[str] = (), jobs: int | None = None,
          use_cache: bool = True, launcher: str = "", cutlass_dir: str | None = None,
          cache_dir: str | None = None, use_ninja: bool = True,
          on_progress: Callable[[Progress], None] | None = None) -> BuildResult:
    """Build ``DIR/lib/libbyocc_<stem>.so``. ``archs``: a subset of ``sm_90a``/``sm_80``
    (empty: both); ``jobs``: the heavy-unit limit (default from free memory)."""
    from byocc.backends.build_files import ARCH_KINDS
    from byocc.backends.build_files import NO_ARCH_MACRO
    from byocc.backends.build_files import Unit
    from byocc.backends.build_files import build_ninja
    from byocc.backends.build_files import config_ninja
    from byocc.backends.build_files import default_cache_dir
    from byocc.backends.build_files import default_heavy_depth
    from byocc.backends.build_files import detect_toolchain
    from byocc.backends.build_files import find_ninja
    from byocc.backends.build_files import total_memory
    from byocc.backends.manifest import load_manifest

    start = time.monotonic()
    root = Path(directory)
    manifest = load_manifest(root)
    build_file = root / str(manifest.get("build_file") or "build.ninja")
    if not build_file.is_file():
        raise InputError(f"{build_file}: no build file (re-run `byocc partition -o {directory}`)")
    graph = parse_ninja(build_file, root)
    units, library = _units(graph, build_file)
    variables = graph.variables
    needs_cutlass = variables.get("byocc_needs_cutlass") == "1" or bool(manifest.get("uses_cutlass"))
    needs_cublaslt = variables.get("byocc_needs_cublaslt") == "1" or bool(manifest.get("uses_cublaslt"))
    stem = variables.get("byocc_stem") or Path(library).name[len("libbyocc_"):-len(".so")]

    wanted = tuple(archs) or ARCHS
    for a in wanted:
        if a not in ARCH_KINDS:
            raise InputError(f"unknown arch {a!r} (expected one of {', '.join(ARCHS)})")
    skipped = tuple(k for a, kinds in ARCH_KINDS.items() if a not in wanted for k in kinds)
    defines = tuple(NO_ARCH_MACRO[k] for k in skipped)
    if launcher:
        first = shlex.split(launcher)[:1]
        if not first or shutil.which(first[0]) is None:
            raise ExternalToolError(f"launcher {launcher!r} not found")
    heavy = jobs if jobs is not None else default_heavy_depth(available_memory() or total_memory())
    tc = detect_toolchain(needs_cutlass, needs_cublaslt, strict=True, cutlass_dir=cutlass_dir,
                          launcher=launcher, heavy_depth=heavy, defines=defines,
                          cache_dir=(cache_dir or default_cache_dir()) if use_cache else None)
    total_jobs = max(tc.heavy_depth, os.cpu_count() or 1)
    atomic_write(root / "config.ninja", config_ninja(tc).encode())
    run_file = build_file
    if skipped:
        run_file = root / f"build.{'_'.join(sorted(wanted))}.ninja"
        text = build_ninja(stem, [Unit(s, k, h) for s, k, h in units], needs_cutlass,
                           needs_cublaslt, skip_kinds=skipped)
        atomic_write(run_file, text.encode())
    log_path = root / "build.log"
    (root / "obj").mkdir(exist_ok=True)
    (root / "lib").mkdir(exist_ok=True)
    hits_log = root / "obj" / ".objcache.log"
    hits_log.write_text("", encoding="utf-8")
    env = dict(os.environ, BYOCC_OBJCACHE_LOG=str(hits_log.resolve()))
    ninja = find_ninja() if use_ninja else None
    report = on_progress or (lambda p: None)
    graph = parse_ninja(run_file, root)
    source_of = {o: e.inputs[0] for e in graph.edges if e.rule.startswith("nvcc_") for o in e.outputs}
    with open(log_path, "w", encoding="utf-8") as log:
        if ninja is not None:
            failed, compiled = _run_ninja(ninja, root, run_file, total_jobs, env, log, report)
        else:
            failed, compiled = _run_pool(graph, root, tc.heavy_depth, total_jobs, env, log, report)
    if failed in source_of:
        raise ExternalToolError(f"{source_of[failed]}: compilation failed; the compiler output is in {log_path}")
    if failed is not None:
        step = "linking failed" if failed == library else "failed"
        raise ExternalToolError(f"{failed}: {step}; the output is in {log_path}")
    lib = root / library
    if not lib.is_file():
        raise ExternalToolError(f"the build did not produce {lib}; see {log_path}")
    hits = sum(1 for line in hits_log.read_text(encoding="utf-8").splitlines() if line.startswith("hit "))
    return BuildResult(lib, compiled, hits, ninja is not None, tc.heavy_depth, total_jobs, skipped,
                       log_path, time.monotonic() - start, defines)


def _units(graph: NinjaFile, path: Path) -> tuple[list[tuple[str, str, tuple[str, ...]]], str]:
    units, library = [], None
    for e in graph.edges:
        if e.rule.startswith("nvcc_") and e.inputs:
            units.append((e.inputs[0], e.rule[len("nvcc_"):], tuple(e.implicit)))
        elif e.rule == "link":
            library = e.outputs[0]
    if library is None:
        raise InputError(f"{path}: no link edge (not a byocc build file?)")
    return units, library


def _run_ninja(ninja: str, root: Path, run_file: Path, jobs: int, env: dict, log,
               report: Callable[[Progress], None]) -> tuple[str | None, int]:
    env = dict(env, NINJA_STATUS="[byocc %f/%t %r] ")
    cmd = [ninja, "-C", str(root), "-f", run_file.name, "-j", str(jobs)]
    log.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            text=True, errors="replace")
    failed: str | None = None
    compiled = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        log.write(line)
        m = _STATUS.match(line.rstrip("\n"))
        if m:
            current = m.group(4)
            compiled += 0 if current.startswith("link ") else 1
            report(Progress(int(m.group(1)), int(m.group(2)), current, int(m.group(3))))
            continue
        f = _FAILED.match(line)
        if f and failed is None:
            failed = f.group(1).split(" ")[0]
    rc = proc.wait()
    if rc != 0 and failed is None:
        failed = f"ninja (exit {rc})"
    return failed, compiled


def _run_pool(graph: NinjaFile, root: Path, heavy_depth: int, jobs: int, env: dict, log,
              report: Callable[[Progress], None]) -> tuple[str | None, int]:
    """Compile edges first (pool ``heavy`` at ``heavy_depth``, ``jobs`` in all), then the
    rest in file order (the link)."""
    compiles = [e for e in graph.edges if e.rule.startswith("nvcc_")]
    others = [e for e in graph.edges if not e.rule.startswith("nvcc_") and e.rule != "phony"]
    total = len(compiles) + len(others)
    heavy = threading.Semaphore(max(1, heavy_depth))
    lock = threading.Lock()
    done = running = 0

    def run(edge: Edge) -> tuple[Edge, int, str]:
        for out in edge.outputs:
            Path(root / out).parent.mkdir(parents=True, exist_ok=True)
        sem = heavy if edge.pool == "heavy" else None
        if sem is not None:
            sem.acquire()
        try:
            proc = subprocess.run(["/bin/sh", "-c", edge.command], cwd=root, env=env,
                                  capture_output=True, text=True, errors="replace", check=False)
        finally:
            if sem is not None:
                sem.release()
        return edge, proc.returncode, proc.stdout + proc.stderr

    def finish(edge: Edge, rc: int, output: str) -> str | None:
        nonlocal done, running
        with lock:
            done += 1
            running -= 1
            log.write(f"[{done}/{total}] {edge.description}\n")
            if rc != 0:
                log.write(f"FAILED: [code={rc}] {' '.join(edge.outputs)}\n{edge.command}\n")
            log.write(output)
        report(Progress(done, total, edge.description, running))
        return edge.outputs[0] if rc != 0 else None

    failed: str | None = None
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        # heavy units first, so that the long compiles start early
        order = sorted(compiles, key=lambda e: e.pool != "heavy")
        pending: set[Future] = set()
        queue = list(order)
        while queue or pending:
            while queue and failed is None and len(pending) < max(1, jobs):
                pending.add(pool.submit(run, queue.pop(0)))
                running += 1
            if not pending:
                break
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                bad = finish(*fut.result())
                failed = failed or bad
            if failed is not None:
                queue.clear()
    if failed is not None:
        return failed, done
    for edge in others:
        running += 1
        bad = finish(*run(edge))
        if bad is not None:
            return bad, len(compiles)
    return None, len(compiles)


__all__ = ["ARCHS", "BuildResult", "Edge", "NinjaFile", "Progress", "build", "parse_ninja"]
