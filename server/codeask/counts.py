"""The one check of a count given per call (``top_k``, ``max_files``, ``concurrency``): by CLI flags
(:func:`codeask.console.positive_int`), :meth:`codeask.workspace.Workspace.ask` and the editor's
``codeask.ask`` options. Counts in settings files are checked by the settings model
(:mod:`codeask.settings`, pydantic ``PositiveInt``). Imports nothing, so the CLI helpers can use it.
"""

from __future__ import annotations

import re

__all__ = ["as_positive_int"]

_INTEGER = re.compile(r"-?[0-9]+")


def as_positive_int(name: str | None, value: object) -> int:
    """``value`` as an integer >= 1: an ``int`` (not a ``bool``) or a string of ASCII digits
    (surrounding whitespace ignored). The one check for counts given per call: CLI flags
    (``--top-k``, ``--max-files``, ``--concurrency``), :meth:`~codeask.workspace.Workspace.ask`'s
    ``top_k``/``max_files`` and the editor's ``codeask.ask`` options. ``"+5"``, ``"1_000"``,
    ``2.0`` and ``True`` are refused.

    Raises:
        ValueError: ``"<name>: not an integer (digits only): '+5'"`` or ``"<name>: must be at least
            1: 0"`` (without ``<name>: `` when ``name`` is ``None``: argparse names the flag itself).
    """
    prefix = f"{name}: " if name else ""
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        number = int(value.strip())
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise ValueError(f"{prefix}not an integer (digits only): {value!r}")
    if number < 1:
        raise ValueError(f"{prefix}must be at least 1: {number}")
    return number
