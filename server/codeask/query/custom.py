"""Pipeline steps by name: the built-ins and any installed ``codeask.steps`` entry point.

A package adds a step by declaring an entry point in the group ``codeask.steps``::

    [project.entry-points."codeask.steps"]
    first_n_files = "codeask_first_n_files:FirstNFiles"

and users choose it by name in ``.codeask.toml``::

    [pipeline]
    response_transformers = ["one_per_file", "first_n_files"]

    [pipeline.options.first_n_files]
    n = 3

The entry point names a *factory*: a class or function called with the ``[pipeline.options.NAME]``
table as keyword arguments, plus any of ``llm``, ``templates``, ``settings`` (the full
:class:`~codeask.settings.Settings`) and ``workspace`` that its signature accepts (or all of them
if it takes ``**kwargs``). It returns the step: ``step(query) -> query`` for query transformers,
response transformers and answer generators, ``evaluator(stage, query)`` for evaluators. A plain
function whose only parameters are ``query`` (or ``stage, query``) is used as the step itself.
A step without a ``name`` attribute gets the entry point's name.

Unknown names are a :class:`~codeask.settings.SettingsError` that lists the available names.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from codeask.settings import SettingsError

__all__ = ["GROUP", "BUILTIN_STEPS", "available_steps", "load_step"]

GROUP = "codeask.steps"

#: Built-in steps, also declared as entry points in pyproject.toml; listed here too so they
#: resolve even when the installed metadata predates them.
BUILTIN_STEPS: dict[str, str] = {
    "one_per_file": "codeask.query.steps.one_per_file:OnePerFile",
    "rerank": "codeask.query.steps.rerank:Rerank",
    "summary": "codeask.query.steps.summary:Summary",
    "widen": "codeask.query.steps.widen:Widen",
}

_CONTEXT = ("llm", "templates", "settings", "workspace")


def available_steps() -> dict[str, EntryPoint]:
    """Every step name -> its entry point (installed entry points win over the built-in table).

    The installed entry points are read once per ``sys.path`` (reading them scans every installed
    distribution's metadata, ~0.1 s on a full environment, which every ask paid): a step installed
    into a running language server is found after a restart, or when ``sys.path`` changes.
    """
    return dict(_steps_for(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _steps_for(path: tuple[str, ...]) -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {
        name: EntryPoint(name=name, value=value, group=GROUP) for name, value in BUILTIN_STEPS.items()
    }
    for ep in entry_points(group=GROUP):
        found[ep.name] = ep
    return found


def _is_plain_step(obj: Any) -> bool:
    if inspect.isclass(obj) or not callable(obj):
        return False
    try:
        params = list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return False
    return params in (["query"], ["stage", "query"])


def load_step(name: str, *, kind: str = "step", options: dict[str, Any] | None = None, **context: Any) -> Any:
    """Load and build step ``name``.

    Args:
        name: the entry-point name.
        kind: what it is used as (for messages): ``query transformer``, ``response transformer``,
            ``answer``, ``evaluator``.
        options: keyword arguments for the factory (``[pipeline.options.NAME]``).
        context: ``llm``, ``templates``, ``settings``, ``workspace``; passed when accepted.

    Raises:
        SettingsError: unknown name (listing the available ones), an import failure, or a factory
            that rejects the options.
    """
    steps = available_steps()
    ep = steps.get(name)
    if ep is None:
        raise SettingsError(
            f"pipeline: unknown {kind} {name!r}; available steps (entry point group {GROUP!r}): "
            f"{', '.join(sorted(steps)) or 'none'}"
        )
    try:
        factory = ep.load()
    except Exception as exc:
        raise SettingsError(f"pipeline: cannot load step {name!r} ({ep.value}): {exc}") from exc
    options = dict(options or {})
    if _is_plain_step(factory) and not options:
        step = factory
    else:
        try:
            sig = inspect.signature(factory)
            params: Mapping[str, inspect.Parameter] = sig.parameters
            var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        except (TypeError, ValueError):
            params, var_kw = {}, True
        kwargs = {k: v for k, v in context.items() if k not in options and (var_kw or k in params)}
        kwargs.update(options)
        try:
            step = factory(**kwargs)
        except TypeError as exc:
            raise SettingsError(f"pipeline.options.{name}: {exc}") from exc
    if not callable(step):
        raise SettingsError(f"pipeline: step {name!r} ({ep.value}) did not produce a callable step")
    if not getattr(step, "name", None):
        try:
            step.name = name
        except AttributeError:
            pass
    return step
