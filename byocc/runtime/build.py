"""``byocc build``: compile a generated library from the build plan its manifest records.

:func:`build` reads ``DIR/manifest.json`` and its plan (:class:`~byocc.backends.codegen.BuildPlan`),
checks that every file the build of the asked archs reads is there and readable (a missing
one is named), finds the tools (nvcc; ninja, else an internal pool; CUTLASS headers and
cuBLASLt only when a unit of the build needs them: a missing one is an
:class:`~byocc.ir.ExternalToolError` naming it), writes ``build.ninja``, ``config.ninja`` and
``CMakeLists.txt`` from the plan for those archs and this machine (so that a later
``ninja -C DIR`` builds exactly the same), and runs the build:

1. ninja on ``build.ninja``, ``-j max(heavy, nproc)`` with pool ``heavy`` at the heavy depth;
2. without ninja, the same commands (:func:`byocc.backends.toolchain.commands`) through a
   thread pool of subprocesses with the same two limits, then the link.

One build of a folder runs at a time (a lock in ``DIR/obj``; a second one waits, then finds
everything up to date). Every compiler message goes to ``DIR/build.log``; progress is
reported through a callback (the CLI draws it), starting with the plan's step count.
Output: ``DIR/lib/libbyocc_<stem>.so``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED
from concurrent.futures import Future
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from byocc.backends.codegen import ARCHS
from byocc.backends.codegen import BuildPlan
from byocc.ir import ExternalToolError
from byocc.ir import InputError

from .inputs import available_memory
from .objcache import atomic_write

_STATUS = re.compile(r"^\[byocc (\d+)/(\d+) (\d+)\] (.*)$")
_FAILED = re.compile(r"^FAILED: (?:\[code=\d+\] )?(.*?)\s*$")
#: What builds before the plan wrote for one arch; removed so that nothing stale is left.
_OLD_ARCH_FILES = ("build.sm_80.ninja", "build.sm_90a.ninja", "build.sm_80_sm_90a.ninja")


@dataclass(frozen=True)
class Progress:
    """One progress report: ``done`` of ``total`` steps finished, ``current`` the step just
    reported (``light src/funcs/f.cu``, ``link lib/...``; empty in the first report, sent
    before anything runs)."""

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
    cache_rejected: int = 0  # cached objects that failed their check and were compiled again
    archs: tuple[str, ...] = ARCHS


def build(directory: str | Path, *, archs: Sequence[str] = (), jobs: int | None = None,
          use_cache: bool = True, launcher: str = "", cutlass_dir: str | None = None,
          cache_dir: str | None = None, use_ninja: bool = True,
          on_progress: Callable[[Progress], None] | None = None,
          on_wait: Callable[[str], None] | None = None) -> BuildResult:
    """Build ``DIR/lib/libbyocc_<stem>.so``. ``archs``: a subset of ``sm_90a``/``sm_80``
    (empty: both); ``jobs``: the heavy-unit limit (default from free memory); ``on_wait``
    is told once when another build of the folder holds it."""
    from byocc.backends.manifest import load_manifest
    from byocc.backends.manifest import load_plan
    from byocc.backends.toolchain import arch_defines
    from byocc.backends.toolchain import skipped_kinds

    start = time.monotonic()
    root = Path(directory)
    plan = load_plan(root, load_manifest(root))
    wanted = _archs(archs)
    check_files(root, plan, wanted)
    tc = _toolchain(plan, wanted, jobs=jobs, use_cache=use_cache, launcher=launcher,
                    cutlass_dir=cutlass_dir, cache_dir=cache_dir)
    total_jobs = max(tc.heavy_depth, os.cpu_count() or 1)
    log_path = root / "build.log"
    with _folder_lock(root, on_wait or (lambda msg: None)):
        write_build_files(root, plan, tc, wanted)
        (root / "lib").mkdir(exist_ok=True)
        cache_log = root / "obj" / ".objcache.log"
        cache_log.write_text("", encoding="utf-8")
        env = dict(os.environ, BYOCC_OBJCACHE_LOG=str(cache_log.resolve()))
        ninja = _ninja() if use_ninja else None
        failed, compiled = _run(plan, tc, wanted, root, ninja, total_jobs, env, log_path,
                                on_progress or (lambda p: None))
        events = [line.partition(" ")[0] for line in cache_log.read_text(encoding="utf-8").splitlines()]
    _raise_on_failure(plan, wanted, failed, log_path)
    lib = root / plan.library
    if not lib.is_file():
        raise ExternalToolError(f"the build did not produce {lib}; see {log_path}")
    return BuildResult(lib, compiled, events.count("hit"), ninja is not None, tc.heavy_depth,
                       total_jobs, skipped_kinds(wanted), log_path, time.monotonic() - start,
                       arch_defines(wanted), events.count("rejected"), wanted)


def steps_left_generic(manifest: dict, archs: Sequence[str]) -> list[tuple[str, str]]:
    """``(function symbol, composite)`` of every step a build for ``archs`` leaves with no
    CUTLASS/cuBLAS kernel on a Hopper GPU: the step has sm_80 variants but no sm_90a one
    (a C = 3 stem, an unaligned N, ...), and ``archs`` leave the sm_80 units out, so on the
    H100/H200 too only its generic kernel runs (the sm_80 units carry sm_90 SASS: they are
    those steps' fast path there)."""
    wanted = _archs(archs)
    if "sm_80" in wanted:
        return []
    out = []
    for f in manifest.get("functions", ()):
        for step in f.get("steps") or ():
            arches = [v.get("arch") for v in step.get("variants") or ()]
            fast80 = any(v.get("arch") == "sm_80" and not str(v.get("impl", "")).startswith("generic")
                         for v in step.get("variants") or ())
            if fast80 and "sm_90a" not in arches:
                out.append((str(f.get("symbol") or f.get("global_symbol")), str(step.get("composite"))))
    return out


def _archs(archs: Sequence[str]) -> tuple[str, ...]:
    wanted = tuple(dict.fromkeys(archs)) or ARCHS
    for a in wanted:
        if a not in ARCHS:
            raise InputError(f"unknown arch {a!r} (expected one of {', '.join(ARCHS)})")
    return tuple(sorted(wanted))


def check_files(root: Path, plan: BuildPlan, archs: Sequence[str]) -> None:
    """Every file a build for ``archs`` reads exists and can be read; an :class:`InputError`
    names the first that cannot."""
    for rel in plan.files(archs):
        path = root / rel
        try:
            with open(path, "rb") as f:
                f.read(1)
        except FileNotFoundError:
            raise InputError(f"{rel}: generated file missing (re-run `byocc partition -o {root}`)") from None
        except IsADirectoryError:
            raise InputError(f"{rel}: is a folder, not a generated file") from None
        except OSError as exc:
            raise InputError(f"{rel}: cannot read the generated file: {exc.strerror}") from None


def _toolchain(plan: BuildPlan, archs: Sequence[str], *, jobs: int | None, use_cache: bool,
               launcher: str, cutlass_dir: str | None, cache_dir: str | None):
    from byocc.backends.toolchain import default_cache_dir
    from byocc.backends.toolchain import default_heavy_depth
    from byocc.backends.toolchain import detect_toolchain
    from byocc.backends.toolchain import total_memory

    if launcher:
        first = shlex.split(launcher)[:1]
        if not first or shutil.which(first[0]) is None:
            raise ExternalToolError(f"launcher {launcher!r} not found")
    units = plan.compiled(archs)
    heavy = jobs if jobs is not None else default_heavy_depth(available_memory() or total_memory())
    return detect_toolchain(any(u.needs_cutlass for u in units), any(u.needs_cublaslt for u in units),
                            strict=True, cutlass_dir=cutlass_dir, launcher=launcher, heavy_depth=heavy,
                            cache_dir=(cache_dir or default_cache_dir()) if use_cache else None)


def write_build_files(root: Path, plan: BuildPlan, tc, archs: Sequence[str]) -> None:
    """``build.ninja``, ``config.ninja`` and ``CMakeLists.txt`` for ``archs`` and ``tc``
    (atomically; a symlink is written through), and ``obj/``."""
    from byocc.backends.build_files import build_files

    for name, text in build_files(plan, tc, archs).items():
        atomic_write(root / name, text.encode())
    for name in _OLD_ARCH_FILES:
        with contextlib.suppress(FileNotFoundError):
            (root / name).unlink()


def _ninja() -> str | None:
    from byocc.backends.toolchain import find_ninja

    return find_ninja()


@contextlib.contextmanager
def _folder_lock(root: Path, on_wait: Callable[[str], None]) -> Iterator[None]:
    """Hold ``DIR/obj/.lock`` (exclusive) for the build: a second build of the folder waits."""
    (root / "obj").mkdir(exist_ok=True)
    with open(root / "obj" / ".lock", "a") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(f"waiting for another build of {root}")
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _run(plan: BuildPlan, tc, archs: Sequence[str], root: Path, ninja: str | None, jobs: int,
         env: dict, log_path: Path, report: Callable[[Progress], None]) -> tuple[str | None, int]:
    from byocc.backends.toolchain import commands

    steps = commands(plan, tc, archs)
    report(Progress(0, len(steps), ""))
    with open(log_path, "w", encoding="utf-8") as log:
        if ninja is not None:
            return _run_ninja(ninja, root, jobs, env, log, report)
        return _run_pool(steps, root, tc.heavy_depth, jobs, env, log, report)


def _raise_on_failure(plan: BuildPlan, archs: Sequence[str], failed: str | None, log_path: Path) -> None:
    if failed is None:
        return
    source_of = {u.object: u.path for u in plan.compiled(archs)}
    if failed in source_of:
        raise ExternalToolError(f"{source_of[failed]}: compilation failed; the compiler output is in {log_path}")
    if failed == plan.library:
        raise ExternalToolError(f"{failed}: linking failed; the output is in {log_path}")
    raise ExternalToolError(f"{failed}; the output is in {log_path}")


def _run_ninja(ninja: str, root: Path, jobs: int, env: dict, log,
               report: Callable[[Progress], None]) -> tuple[str | None, int]:
    env = dict(env, NINJA_STATUS="[byocc %f/%t %r] ")
    cmd = [ninja, "-C", str(root), "-j", str(jobs)]
    log.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            text=True, errors="replace")
    failed: str | None = None
    last = ""
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
        if line.strip():
            last = line.strip()
    rc = proc.wait()
    if rc != 0 and failed is None:
        failed = f"ninja failed (exit {rc})" + (f": {last}" if last else "")
    return failed, compiled


def _run_pool(steps, root: Path, heavy_depth: int, jobs: int, env: dict, log,
              report: Callable[[Progress], None]) -> tuple[str | None, int]:
    """The compile steps (heavy ones first, at most ``heavy_depth`` of them at once, ``jobs``
    in all), then the link."""
    compiles = [s for s in steps if s.unit is not None]
    others = [s for s in steps if s.unit is None]
    total = len(steps)
    heavy = threading.Semaphore(max(1, heavy_depth))
    lock = threading.Lock()
    done = running = 0

    def run(step) -> tuple[object, int, str]:
        Path(root / step.output).parent.mkdir(parents=True, exist_ok=True)
        sem = heavy if step.heavy else contextlib.nullcontext()
        with sem:
            proc = subprocess.run(["/bin/sh", "-c", step.command], cwd=root, env=env,
                                  capture_output=True, text=True, errors="replace", check=False)
        return step, proc.returncode, proc.stdout + proc.stderr

    def finish(step, rc: int, output: str) -> str | None:
        nonlocal done, running
        with lock:
            done += 1
            running -= 1
            log.write(f"[{done}/{total}] {step.description}\n")
            if rc != 0:
                log.write(f"FAILED: [code={rc}] {step.output}\n{step.command}\n")
            log.write(output)
        report(Progress(done, total, step.description, running))
        return step.output if rc != 0 else None

    failed: str | None = None
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        queue = sorted(compiles, key=lambda s: not s.heavy)  # the long compiles start early
        pending: set[Future] = set()
        while queue or pending:
            while queue and failed is None and len(pending) < max(1, jobs):
                pending.add(pool.submit(run, queue.pop(0)))
                running += 1
            if not pending:
                break
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                failed = failed or finish(*fut.result())
            if failed is not None:
                queue.clear()
    if failed is not None:
        return failed, done
    for step in others:
        running += 1
        bad = finish(*run(step))
        if bad is not None:
            return bad, len(compiles)
    return None, len(compiles)


__all__ = [
    "ARCHS", "BuildResult", "Progress", "build", "check_files", "steps_left_generic", "write_build_files"]
