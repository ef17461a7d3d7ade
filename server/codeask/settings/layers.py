"""How the settings are loaded: the layers (see :mod:`codeask.settings`), merged in order, with the
untrusted ones restricted first (:func:`restrict_untrusted`), then validated by the model.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from codeask.settings.defaults import CONFIG_FILE, USER_CONFIG_ENV, USER_CONFIG_FILE
from codeask.settings.environment import ENV_VARS, SOURCE, environment_layer
from codeask.settings.model import TRUST_MARKER, Settings, SettingsError, rejection
from codeask.settings.provider import ProviderEnv
from codeask.settings.retired import DEPRECATED_EXTRAS, PROVIDER_KEYS, drop_retired, warn_deprecated

__all__ = [
    "load_settings",
    "user_config_path",
    "read_config_file",
    "restrict_untrusted",
    "TRUSTED_ONLY",
    "ADD_ONLY",
]

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()


def _normalize(data: Mapping[str, Any]) -> dict[str, Any]:
    """camelCase -> snake_case keys, recursively; ``templates`` and ``options`` keep their keys."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = _snake(key) if isinstance(key, str) else key
        if isinstance(value, Mapping) and name not in ("templates", "options"):
            value = _normalize(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        out[name] = value
    return out


def _merge(base: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in layer.items():
        if value is None:
            continue
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value
    return base


def _dotted(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"retrieval.top_k": 5}`` -> ``{"retrieval": {"top_k": 5}}``; ``None`` values dropped."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        if value is None:
            continue
        node = nested
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if isinstance(value, Mapping) and isinstance(node.get(leaf), dict):
            _merge(node[leaf], value)
        else:
            node[leaf] = value
    return nested


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """The trusted user config file: ``$CODEASK_CONFIG_DIR/codeask.toml`` when that variable is
    set, else ``codeask.toml`` in ``platformdirs.user_config_dir("codeask")`` (e.g.
    ``~/.config/codeask/codeask.toml`` on Linux)."""
    env = os.environ if env is None else env
    folder = env.get(USER_CONFIG_ENV)
    if not folder:
        import platformdirs

        folder = platformdirs.user_config_dir("codeask", appauthor=False)
    return Path(folder) / USER_CONFIG_FILE


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as exc:
        raise SettingsError(f"{path}: {exc.strerror}") from exc
    try:
        return _normalize(tomllib.loads(raw.decode("utf-8", errors="replace")))
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: {exc}") from exc


def read_config_file(root: Path) -> dict[str, Any]:
    """``<root>/.codeask.toml`` as a normalized dict, ``{}`` if absent.

    Raises:
        SettingsError: the file is not valid TOML.
    """
    return _read_toml(root / CONFIG_FILE)


def _marked(kind: str) -> frozenset[str]:
    """Dotted keys of :class:`Settings` whose field carries trust marker ``kind``."""
    found: set[str] = set()

    def mark(info: Any) -> str | None:
        extra = info.json_schema_extra
        return extra.get(TRUST_MARKER) if isinstance(extra, dict) else None

    for section, info in Settings.model_fields.items():
        if mark(info) == kind:
            found.add(section)
        sub = info.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            for key, sub_info in sub.model_fields.items():
                if mark(sub_info) == kind:
                    found.add(f"{section}.{key}")
    return frozenset(found)


def _trusted_hint(key: str, config: Path) -> str:
    section, _, leaf = key.partition(".")
    where = f"[{section}] {leaf}" if leaf else f"[{section}]"
    # ``llm.base_url`` / ``llm.api_key`` are the provider's own variables
    generic = {"llm.base_url": "base_url", "llm.api_key": "api_key"}.get(key)
    keys = {key} if generic is None else {f"llm.openai_{generic}", f"llm.anthropic_{generic}"}
    variables = sorted(variable for variable, k in ENV_VARS.items() if k in keys)
    also = "".join(f", ${variable}" for variable in variables)
    return f"set it in {where} of {config}{also}, user settings or a command-line flag"


def restrict_untrusted(
    layer: Mapping[str, Any],
    source: str,
    warnings: list[str],
    *,
    config: Path | None = None,
    trusted: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An untrusted (workspace) layer with every :data:`TRUSTED_ONLY` key removed (one warning
    each, appended to ``warnings``) and :data:`ADD_ONLY` lists moved to their ``extra_`` key, so
    they add to the trusted list instead of replacing it.

    A trusted-only value equal to the one the trusted layers below already set (``trusted``, a
    merged normalized dict) changes nothing and is dropped without a warning: a client that sends
    the user's own settings both ways (Neovim's ``init_options`` and ``settings``) is not warned.
    """
    config = config or user_config_path()
    trusted = trusted or {}
    out: dict[str, Any] = {}

    def ignore(key: str, value: Any) -> None:
        section, _, leaf = key.partition(".")
        known = trusted.get(section)
        if leaf and isinstance(known, Mapping):
            known = known.get(leaf)
        if value is not None and value != known:
            warnings.append(f"{source}: ignored `{key}` (trusted settings only; {_trusted_hint(key, config)})")

    for section, value in layer.items():
        if section in TRUSTED_ONLY:
            ignore(section, value)
            continue
        if not isinstance(value, Mapping) or section in ("templates",):
            out[section] = value
            continue
        kept: dict[str, Any] = {}
        for key, sub in value.items():
            dotted = f"{section}.{key}"
            if dotted in TRUSTED_ONLY:
                ignore(dotted, sub)
            elif dotted in ADD_ONLY and isinstance(sub, list):
                kept[f"extra_{key}"] = [*kept.get(f"extra_{key}", []), *sub]
            elif key.startswith("extra_") and isinstance(sub, list) and isinstance(kept.get(key), list):
                kept[key] = [*kept[key], *sub]
            else:
                kept[key] = sub
        out[section] = kept
    return _drop_invalid(out, source, warnings)


def _drop_invalid(layer: dict[str, Any], source: str, warnings: list[str]) -> dict[str, Any]:
    """``layer`` without the values :class:`Settings` rejects (unknown keys, wrong types, numbers
    out of range such as ``retrieval.top_k = 0``), one warning each naming the key: a bad value
    in an untrusted layer falls back to the trusted layers' value instead of failing the workspace.
    Each key is validated alone (no setting depends on another)."""
    out: dict[str, Any] = {}
    for section, value in layer.items():
        if not isinstance(value, Mapping):
            if (problem := rejection({section: value})) is None:
                out[section] = value
            else:
                warnings.append(f"{source}: ignored `{section}` ({problem})")
            continue
        kept: dict[str, Any] = {}
        for key, sub in value.items():
            field = key.removeprefix("extra_") if f"{section}.{key}" in DEPRECATED_EXTRAS else key
            if sub is None or (problem := rejection({section: {field: sub}})) is None:
                kept[key] = sub
            else:
                warnings.append(f"{source}: ignored `{section}.{key} = {sub!r}` ({problem})")
        out[section] = kept
    return out


def _append_extras(merged: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    """``layer`` with each ``extra_`` list of an :data:`ADD_ONLY` key prefixed by the value already
    in ``merged``: exclude and secret patterns accumulate over layers, none removes another's."""
    out = dict(layer)
    for dotted in ADD_ONLY:
        section, _, key = dotted.partition(".")
        new = out.get(section)
        if not isinstance(new, Mapping) or not isinstance(new.get(f"extra_{key}"), list):
            continue
        before = merged.get(section, {}).get(f"extra_{key}", []) if isinstance(merged.get(section), dict) else []
        added = [p for p in new[f"extra_{key}"] if p not in before]
        out[section] = {**new, f"extra_{key}": [*before, *added]}
    return out


def _fold_extras(merged: dict[str, Any]) -> None:
    """Add each ``extra_`` list (the untrusted layers' additions, and the deprecated keys of
    :data:`~codeask.settings.retired.DEPRECATED_EXTRAS`) to its :data:`ADD_ONLY` list, in place;
    the model has no ``extra_`` field."""
    for dotted in ADD_ONLY:
        section, _, key = dotted.partition(".")
        values = merged.get(section)
        if not isinstance(values, dict) or f"extra_{key}" not in values:
            continue
        extra = values.pop(f"extra_{key}")
        if isinstance(extra, list):
            base = values[key] if key in values else list(getattr(getattr(Settings(), section), key))
            values[key] = [*base, *(p for p in extra if p not in base)]
        else:
            values[f"extra_{key}"] = extra


def load_settings(
    root: Path | str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    editor: Mapping[str, Any] | None = None,
    workspace_editor: Mapping[str, Any] | None = None,
    flags: Mapping[str, Any] | None = None,
    user_config: Path | None = None,
) -> Settings:
    """Build the settings for workspace ``root`` from all layers (see the module docstring).

    Args:
        root: workspace folder whose ``.codeask.toml`` is read; ``None`` skips the file.
        env: environment mapping; defaults to ``os.environ``. Also locates the user config file.
        editor: user-scoped (trusted) editor settings, nested or dotted, camelCase or snake_case.
        workspace_editor: workspace-scoped (untrusted) editor settings, same shape.
        flags: CLI flags as dotted keys, e.g. ``{"retrieval.top_k": 5}``; ``None`` values ignored.
        user_config: the user config file; default :func:`user_config_path`.

    Returns:
        The settings, with :attr:`Settings.warnings` naming each ignored workspace value and each
        retired or deprecated key a layer sets (:mod:`codeask.settings.retired`).

    Raises:
        SettingsError: invalid file or value, naming the key.
    """
    env = os.environ if env is None else env
    config = user_config or user_config_path({**os.environ, **env})
    warnings: list[str] = []
    layers = _layers(Path(root) if root is not None else None, env, editor, workspace_editor, flags, config, warnings)
    merged: dict[str, Any] = {}
    for _, layer in layers:
        _merge(merged, _append_extras(merged, layer))
    _fold_extras(merged)
    llm = merged.get("llm", {})
    provider_env = ProviderEnv(**{name: llm.pop(name, None) for name in PROVIDER_KEYS})
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(_problem(layers, [str(part) for part in err["loc"]], err["msg"]) for err in exc.errors())
        raise SettingsError(f"invalid settings: {problems}") from exc
    settings.root = str(root) if root is not None else None
    settings.warnings = warnings
    settings.use_provider_env(provider_env)
    return settings


def _problem(layers: list[tuple[str, dict[str, Any]]], loc: list[str], message: str) -> str:
    """One value the model rejected, named by the layer that set it (the last one setting its key;
    no other layer is blamed): ``command line: retrieval.top_k: Input should be greater than 0``."""

    def sets(layer: Mapping[str, Any]) -> bool:
        node: Any = layer
        for part in loc[:2]:  # the section and the key (a list's item index is not a layer's key)
            if not isinstance(node, Mapping) or part not in node:
                return False
            node = node[part]
        return True

    source = next((name for name, layer in reversed(layers) if sets(layer)), "settings")
    return f"{source}: {'.'.join(loc)}: {message}"


def _trusted_layer(source: str, layer: Mapping[str, Any], warnings: list[str]) -> dict[str, Any]:
    """A trusted layer without its retired keys, its deprecated ones warned about."""
    warn_deprecated(layer, source, warnings)
    return drop_retired(layer, source, warnings)


def _layers(
    root: Path | None,
    env: Mapping[str, str],
    editor: Mapping[str, Any] | None,
    workspace_editor: Mapping[str, Any] | None,
    flags: Mapping[str, Any] | None,
    config: Path,
    warnings: list[str],
) -> list[tuple[str, dict[str, Any]]]:
    """``(source, layer)`` in precedence order, low to high (see the module docstring), each
    normalized, without retired keys, the untrusted ones restricted (:func:`restrict_untrusted`)."""
    user = _trusted_layer(str(config), _read_toml(config), warnings)
    environment = environment_layer(env, warnings)
    scoped = _normalize(_dotted(dict(editor))) if editor else {}
    user_editor = _trusted_layer("user settings", scoped, warnings)
    command_line = _trusted_layer("command line", _normalize(_dotted(dict(flags))) if flags else {}, warnings)
    trusted: dict[str, Any] = {}
    for layer in (user, environment, user_editor, command_line):
        _merge(trusted, layer)
    layers = [(str(config), user)]
    untrusted: list[tuple[str, dict[str, Any]]] = []
    if root is not None:
        untrusted.append((str(root / CONFIG_FILE), read_config_file(root)))
    if workspace_editor:
        untrusted.append(("workspace settings", _normalize(_dotted(dict(workspace_editor)))))
    for name, layer in untrusted:
        warn_deprecated(layer, name, warnings, DEPRECATED_EXTRAS)
    restricted = [
        (name, restrict_untrusted(drop_retired(layer, name, warnings), name, warnings, config=config, trusted=trusted))
        for name, layer in untrusted
    ]
    in_file = restricted[:1] if root is not None else []
    layers += [*in_file, (SOURCE, environment), ("user settings", user_editor)]
    layers += [*restricted[len(in_file) :], ("command line", command_line)]
    return layers


#: Dotted keys (or whole sections) only trusted layers may set: fields declared with
#: :func:`trusted_only` (add a key by declaring its field with ``trusted_only(...)``), and the
#: providers' own keys and base URLs (:data:`~codeask.settings.retired.PROVIDER_KEYS`).
TRUSTED_ONLY: frozenset[str] = _marked("trusted") | {f"llm.{name}" for name in PROVIDER_KEYS}
#: Dotted list keys untrusted layers may only add to: fields declared with :func:`add_only`.
ADD_ONLY: frozenset[str] = _marked("add")
