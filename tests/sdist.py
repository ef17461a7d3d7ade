"""Fetching the PyPI source distributions that tests, benchmarks and the question sets in
``shared/eval`` are anchored to (test and benchmark tooling: not part of the installed package)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import filelock

__all__ = ["fetch_sdist"]


def fetch_sdist(pin: str, where: Path) -> Path:
    """Download (once) and unpack ``name==version`` from PyPI into ``where``; returns the unpacked root.

    Uses ``pip download --no-deps --no-binary :all:``; later calls reuse the archive and the
    unpacked folder.

    Raises:
        subprocess.CalledProcessError: pip could not download the sdist.
    """
    name, version = pin.split("==")
    root = where / f"{name}-{version}"
    if root.is_dir():
        return root
    where.mkdir(parents=True, exist_ok=True)
    # Several test or benchmark processes may ask at once: one downloads and unpacks, the others wait.
    with filelock.FileLock(str(where / f".{name}-{version}.lock")):
        if root.is_dir():
            return root
        archive = where / f"{name}-{version}.tar.gz"
        if not archive.exists():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                 "-d", str(where), pin],
                check=True,
            )
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-{version}.", dir=where))
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
            (tmp / f"{name}-{version}").rename(root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return root
