"""Helpers every test file shares: where the project's ``shared/`` folder is, and running the
CLI in-process.

``shared/`` (the spec and the TVM-made conformance corpus) sits beside the project root
(``<root>/../shared``, as in the repository's home) or inside it; ``BYOCC_SHARED`` names it
anywhere else. Tests that need it skip, with a message naming where it was looked for, when
it is absent; they never name an absolute path of one machine.

Test files import these names (``from conftest import SHARED, run_cli``): pytest puts this
folder on ``sys.path`` for them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
"""The project root (the folder holding ``byocc/`` and ``tests/``)."""


def find_shared() -> Path | None:
    """The ``shared/`` folder: ``$BYOCC_SHARED`` if set, else ``<root>/../shared``, else
    ``<root>/shared``; None if none of them holds a ``spec/`` or ``conformance/`` folder."""
    env = os.environ.get("BYOCC_SHARED")
    candidates = [Path(env)] if env else [ROOT.parent / "shared", ROOT / "shared"]
    for folder in candidates:
        if (folder / "spec").is_dir() or (folder / "conformance").is_dir():
            return folder.resolve()
    return None


SHARED: Path | None = find_shared()
"""The ``shared/`` folder, or None when it is absent."""

SHARED_MISSING = (f"BYOCC_SHARED={os.environ['BYOCC_SHARED']} holds no spec/ or conformance/ folder"
                  if os.environ.get("BYOCC_SHARED") else
                  "the shared/ folder (spec and conformance corpus) is not beside the project root "
                  f"({ROOT.parent / 'shared'}); set BYOCC_SHARED to its path")
"""The skip message of tests that need ``shared/``."""


def shared_path(*parts: str) -> Path | None:
    """``shared/<parts>`` if it exists, else None (for module-level constants)."""
    if SHARED is None:
        return None
    path = SHARED.joinpath(*parts)
    return path if path.exists() else None


def shared_glob(pattern: str) -> list[Path]:
    """Sorted paths under ``shared/`` matching ``pattern`` ([] without ``shared/``)."""
    return sorted(SHARED.glob(pattern)) if SHARED is not None else []


def require_shared(*parts: str) -> Path:
    """``shared/<parts>``, or skip the calling test with a message saying what is missing."""
    if SHARED is None:
        pytest.skip(SHARED_MISSING)
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not present")
    return path


@pytest.fixture()
def shared() -> Path:
    """The ``shared/`` folder; skips the test (with a message) when it is absent."""
    return require_shared()


def run_cli(*args, **kwargs):
    """``byocc ARGS...`` in-process through click's ``CliRunner`` (arguments may be paths),
    exceptions not caught (a traceback fails the test); keyword arguments go to ``invoke``
    (``input=``, ``env=``)."""
    from click.testing import CliRunner

    from byocc.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, **kwargs)


def params_or_skip(items: list) -> list:
    """``items`` for ``pytest.mark.parametrize``, or one parameter that skips with
    :data:`SHARED_MISSING` when ``items`` is empty (instead of pytest's silent "empty
    parameter set")."""
    if items:
        return list(items)
    return [pytest.param(None, id="no-shared", marks=pytest.mark.skip(reason=SHARED_MISSING))]


def random_max_pools(rng, tries: int, dtypes, nan_rate: float, max_hw: int):
    """Random max_pool2d problems for the pooling tests: ``(x, layout, ks, st, dl, pad, ceil)``
    with ``x`` NCHW (1-2 x 1-3 x 2..max_hw-1 squared, a NaN at [0, 0, 1, 1] with probability
    ``nan_rate``), windows 1-3, strides 1-3, dilations 1-2, padding up to half the window,
    ceil mode half the time; of ``tries`` draws, the ones whose dilated window fits the padded
    input."""
    import numpy as np

    for _ in range(tries):
        layout = str(rng.choice(["NCHW", "NHWC"]))
        shape = tuple(int(v) for v in (rng.integers(1, 3), rng.integers(1, 4), rng.integers(2, max_hw),
                                       rng.integers(2, max_hw)))
        x = rng.standard_normal(shape).astype(dtypes[int(rng.integers(len(dtypes)))])
        if rng.random() < nan_rate:
            x[0, 0, 1, 1] = np.nan
        ks = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        st, dl = (int(rng.integers(1, 4)), int(rng.integers(1, 3))), (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pad = [min(int(rng.integers(0, 3)), k // 2) for k in ks * 2]
        ceil = bool(rng.random() < 0.5)
        if (ks[0] - 1) * dl[0] + 1 > shape[2] + pad[0] + pad[2] or (ks[1] - 1) * dl[1] + 1 > shape[3] + pad[1] + pad[3]:
            continue
        yield x, layout, ks, st, dl, pad, ceil
