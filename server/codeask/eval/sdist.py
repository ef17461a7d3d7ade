"""Fetching the PyPI source distributions that the question sets in shared/eval are anchored to."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

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
    archive = where / f"{name}-{version}.tar.gz"
    if not archive.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             "-d", str(where), pin],
            check=True,
        )
    tmp = where / f".{name}-{version}.unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    (tmp / f"{name}-{version}").rename(root)
    shutil.rmtree(tmp, ignore_errors=True)
    return root
