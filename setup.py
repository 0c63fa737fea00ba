"""Packaging shim: everything is in pyproject.toml except the package list.

The grammar lives at the repository's top level (``grammars/relax.lark``) and ships inside
the wheel as package data of ``byocc.grammars``, where ``byocc.text`` loads it with
``importlib.resources``. Static pyproject configuration cannot add a mapped package to the
discovered ones, hence this file.
"""

from setuptools import find_packages
from setuptools import setup

setup(
    packages=find_packages(include=["byocc", "byocc.*"]) + ["byocc.grammars"],
    package_dir={"byocc.grammars": "grammars"},
    package_data={
        "byocc.grammars": ["*.lark"],
        "byocc.text": ["lalr_tables.json"],
        # Fixed C++ (csrc/) and the Jinja2 templates of generated C++ (templates/) of every
        # code-generation package (byocc/backends/cuda/templates.py).
        **{f"byocc.backends.{pkg}": ["csrc/*", "templates/*.j2"] for pkg in ("cuda", "cutlass", "cublas")},
    },
    include_package_data=False,
)
