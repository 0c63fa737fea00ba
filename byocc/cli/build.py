"""``byocc build DIR``: compile the sources ``byocc partition -o DIR`` wrote into
``DIR/lib/libbyocc_<stem>.so``, from the build plan its manifest records (the work is
:func:`byocc.runtime.build.build`).

On a terminal a rich progress bar shows units done / total (the plan's total from the
start) and the current unit; otherwise one plain line per finished step goes to stderr. stdout stays empty except for the
library's path at the end (the product). A missing tool or a failed unit is one line and
exit code 3; the compiler output is in ``DIR/build.log``.
"""

from __future__ import annotations

import click

from .output import check_output_dir
from .output import console
from .output import stderr_is_terminal


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(exists=True, file_okay=False))
@click.option("--arch", "archs", multiple=True, type=click.Choice(["sm_90a", "sm_80"]),
              help="Build only the units for these archs (repeatable; default both). "
                   "sm_80 alone skips the sm_90a units and compiles the wrappers with "
                   "-DBYOCC_NO_SM90; DIR/build.ninja is rewritten for them, so a later "
                   "`ninja -C DIR` builds the same.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Heavy (CUTLASS) units compiled at once [default: max(1, min(nproc, "
                   "free GiB / 4))]; light units share the remaining slots.")
@click.option("--cache/--no-cache", "use_cache", default=True, show_default=True,
              help="Use the object cache ($BYOCC_CACHE, default ~/.cache/byocc).")
@click.option("--launcher", metavar="CMD", default="",
              help="Prefix every compile with CMD (ccache, sccache, distcc); runs inside the cache.")
@click.option("--cutlass-dir", metavar="D", default=None,
              type=click.Path(exists=True, file_okay=False),
              help="CUTLASS checkout (or its include/) instead of the nvidia-cutlass package.")
@click.option("--ninja/--no-ninja", "use_ninja", default=True, show_default=True,
              help="Run ninja when available, or always use the internal process pool.")
def build(directory: str, archs: tuple[str, ...], jobs: int | None, use_cache: bool,
          launcher: str, cutlass_dir: str | None, use_ninja: bool) -> None:
    """Compile DIR's generated sources into DIR/lib/libbyocc_<stem>.so.

    \b
    Examples:
      byocc partition samples/mlp_fp16.relax --backend cutlass -o out/
      byocc build out/
      byocc build out/ --arch sm_80 -j 2 --launcher ccache
    """
    ctx = click.get_current_context()
    ctx.find_root().meta["byocc.source"] = directory
    check_output_dir(directory, "DIR")  # config.ninja, obj/, lib/ and build.log go there
    from byocc.runtime.build import build as run_build

    reporter = _RichReporter() if stderr_is_terminal() else _PlainReporter()
    try:
        result = run_build(directory, archs=archs, jobs=jobs, use_cache=use_cache,
                           launcher=launcher, cutlass_dir=cutlass_dir, use_ninja=use_ninja,
                           on_progress=reporter.update, on_wait=reporter.note)
    finally:
        reporter.close()
    if result.cache_rejected:
        n = result.cache_rejected
        click.echo(f"warning: {n} cached object{'s' if n != 1 else ''} failed {'their' if n != 1 else 'its'} "
                   "check (a damaged cache entry) and compiled again", err=True)
    _warn_generic_only(directory, result.archs)
    how = "ninja" if result.used_ninja else "process pool"
    cached = f", {result.cache_hits} from the cache" if result.cache_hits else ""
    skipped = f", skipped {'/'.join(result.skipped_kinds)} units" if result.skipped_kinds else ""
    click.echo(f"built {result.library} ({result.units} units{cached}{skipped}; {how}, "
               f"heavy {result.heavy_depth}, jobs {result.jobs}; {result.seconds:.1f} s)", err=True)
    click.echo(str(result.library))


def _warn_generic_only(directory: str, archs) -> None:
    """One warning when the archs built leave steps with only their generic kernel on Hopper."""
    from byocc.backends.manifest import load_manifest
    from byocc.runtime.build import steps_left_generic

    left = steps_left_generic(load_manifest(directory), archs)
    if left:
        names = ", ".join(f"{sym} ({comp})" for sym, comp in left[:4]) + (f", ... ({len(left)} in all)"
                                                                          if len(left) > 4 else "")
        click.echo(f"warning: without the sm_80 units, {len(left)} step{'s' if len(left) != 1 else ''} "
                   f"ha{'ve' if len(left) != 1 else 's'} no CUTLASS kernel on Hopper either and run "
                   f"{'their' if len(left) != 1 else 'its'} generic kernel: {names}; the sm_80 units run "
                   "natively on the H100/H200 too: build them as well (no --arch, or --arch sm_80 "
                   "beside sm_90a)", err=True)


class _PlainReporter:
    def update(self, p) -> None:
        if p.done:  # the first report (0 done) only announces the total
            click.echo(f"[{p.done}/{p.total}] {p.current}", err=True)

    def note(self, message: str) -> None:
        click.echo(message, err=True)

    def close(self) -> None:
        pass


class _RichReporter:
    """The bar starts with the first report, which carries the plan's step count: it never
    shows an unknown total."""

    def __init__(self) -> None:
        from rich.progress import BarColumn
        from rich.progress import MofNCompleteColumn
        from rich.progress import Progress
        from rich.progress import TextColumn
        from rich.progress import TimeElapsedColumn

        self._progress = Progress(TextColumn("building", markup=False), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TextColumn("{task.description}", markup=False),
                                  console=console(stderr=True, tty=True),
                                  transient=True)
        self._task = None

    def update(self, p) -> None:
        busy = f" ({p.running} running)" if p.running else ""
        if self._task is None:
            self._task = self._progress.add_task(p.current + busy, total=p.total, completed=p.done)
            self._progress.start()
            return
        self._progress.update(self._task, completed=p.done, total=p.total, description=p.current + busy)

    def note(self, message: str) -> None:
        self._progress.console.print(message, markup=False, highlight=False)

    def close(self) -> None:
        if self._task is not None:
            self._progress.stop()


__all__ = ["build"]
