"""What a file is: ``source``, ``test``, ``docs``, ``config``, ``data``, ``generated`` or ``vendored``.

Decided from the path and the file's first lines, in the spirit of GitHub Linguist's ``vendor.yml``
and ``generated.rb`` (the patterns re-expressed here; no code of theirs), first match wins:

``vendored``   a third-party copy: below ``vendor/``, ``third_party/``, ``node_modules/``,
               ``bower_components/``, ``Pods/``, ``extern/`` ... (:data:`VENDORED_PATTERNS`)
``generated``  a generated name (``*.pb.go``, ``*_pb2.py``, ``*.min.js``, lock files ...,
               :data:`GENERATED_PATTERNS`), a "generated, do not edit" marker in the first
               :data:`MARKER_LINES` lines, or code that is mostly a numeric table (:func:`numeric_table`)
``data``       translations (``.xlf``, ``.po``, ``.arb``, JSON/YAML catalogs in ``locales/``,
               ``i18n/``...), fonts and SVG, tabular data (``.csv``) (:data:`DATA_PATTERNS`)
``test``       ``tests/``, ``test_*.py``, ``*_test.go``, ``*.spec.ts``, ``test.c`` ... (``DEFAULT_TEST_PATTERNS``)
``docs``       ``docs/``, ``*.md``, ``*.rst``, README, changelogs, licences (``DEFAULT_DOCS_PATTERNS``)
``config``     CI, tool and build configuration (``DEFAULT_CONFIG_PATTERNS``)
``source``     everything else

The test, docs and config patterns are the ones ``retrieval.downweight_patterns`` starts from
(:mod:`codeask.settings.defaults`), so the two never disagree. Every function here is pure and never
raises.
"""

from __future__ import annotations

import functools
import re
from typing import Literal, cast

from pathspec import GitIgnoreSpec

from codeask.settings.defaults import DEFAULT_CONFIG_PATTERNS, DEFAULT_DOCS_PATTERNS, DEFAULT_TEST_PATTERNS

__all__ = [
    "KINDS",
    "Kind",
    "KEYWORD_ONLY_KINDS",
    "NEVER_EMBEDDED_KINDS",
    "VENDORED_PATTERNS",
    "GENERATED_PATTERNS",
    "DATA_PATTERNS",
    "classify",
    "keyword_only_kinds",
    "kind_of_path",
    "numeric_table",
]

Kind = Literal["source", "test", "docs", "config", "data", "generated", "vendored"]
KINDS: tuple[Kind, ...] = ("source", "test", "docs", "config", "data", "generated", "vendored")
#: Whether vendored and generated code is embedded too: off, it is indexed keyword-only (searchable,
#: ranked below the project's own code, never waited for): ``bench/vendor.py`` measured a tree with
#: a vendored copy searchable as soon as the project's own code, and reports the embedding time it
#: would cost with it on. Recorded in each index's meta (:mod:`codeask.index.meta`): a new value
#: rebuilds the index. Was ``index.embed_third_party``.
EMBED_THIRD_PARTY = False
#: Kinds indexed keyword-only unless :data:`EMBED_THIRD_PARTY`.
KEYWORD_ONLY_KINDS: frozenset[str] = frozenset({"vendored", "generated"})
#: Kinds never embedded: their text is not code a question is answered from.
NEVER_EMBEDDED_KINDS: frozenset[str] = frozenset({"data"})

#: Third-party folders (gitignore syntax; after Linguist's vendor.yml).
VENDORED_PATTERNS: tuple[str, ...] = (
    "vendor/",
    "vendors/",
    "_vendor/",
    "vendored/",
    "third_party/",
    "third-party/",
    "thirdparty/",
    "3rdparty/",
    "3rd_party/",
    "3rd-party/",
    "extern/",
    "node_modules/",
    "bower_components/",
    "jspm_packages/",
    "site-packages/",
    "Pods/",
    "Carthage/",
    "Godeps/_workspace/",
    ".yarn/",
)

#: Generated files by name (after Linguist's generated.rb): protobuf/gRPC/Thrift output, minified
#: bundles and source maps, designer files, lock files.
GENERATED_PATTERNS: tuple[str, ...] = (
    "*.pb.go",
    "*.pb.gw.go",
    "*_grpc.pb.go",
    "*.pb.cc",
    "*.pb.h",
    "*_pb2.py",
    "*_pb2_grpc.py",
    "*_pb2.pyi",
    "*_pb.js",
    "*_pb.d.ts",
    "*_pb.ts",
    "*_grpc_pb.js",
    "zz_generated*.go",
    "*.generated.*",
    "*.g.dart",
    "*.freezed.dart",
    "*.designer.cs",
    "*.Designer.cs",
    "*.min.js",
    "*.min.css",
    "*.js.map",
    "*.css.map",
    "*.map",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "Cargo.lock",
    "Gemfile.lock",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "pdm.lock",
    "composer.lock",
    "go.sum",
    "flake.lock",
    "mix.lock",
    "pubspec.lock",
    "Podfile.lock",
    "packages.lock.json",
)

#: Data files: translations and message catalogs, fonts and vector images, tables.
DATA_PATTERNS: tuple[str, ...] = (
    "*.xlf",
    "*.xliff",
    "*.po",
    "*.pot",
    "*.arb",
    "*.strings",
    "*.stringsdict",
    "*.resx",
    "*.ts.xml",
    "locale/**/*.json",
    "locales/**/*.json",
    "i18n/**/*.json",
    "l10n/**/*.json",
    "lang/**/*.json",
    "translations/**/*.json",
    "locale/**/*.y*ml",
    "locales/**/*.y*ml",
    "i18n/**/*.y*ml",
    "translations/**/*.y*ml",
    "*.svg",
    "*.ttf",
    "*.otf",
    "*.woff",
    "*.woff2",
    "*.eot",
    "*.csv",
    "*.tsv",
    "*.jsonl",
    "*.ndjson",
    "*.geojson",
)

#: How many first lines are searched for a generated-file marker.
MARKER_LINES = 10
_MARKER = re.compile(
    r"code generated .* do not edit|@generated\b|\bdo not edit\b|autogenerated|auto-generated"
    r"|generated by the protocol buffer compiler|this file (?:is|was) (?:automatically )?generated"
    r"|generated automatically by|automatically generated by",
    re.IGNORECASE,
)
#: Files below this many characters are never called a numeric table.
TABLE_MIN_CHARS = 20_000
#: Share of non-blank characters in numeric literals and separators that makes a code file a table.
TABLE_SHARE = 0.6
_NUMERIC = re.compile(r"(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*|[,{}\[\]()]")


@functools.lru_cache(maxsize=1)
def _specs() -> dict[str, GitIgnoreSpec]:
    lists = {
        "vendored": VENDORED_PATTERNS,
        "generated": GENERATED_PATTERNS,
        "data": DATA_PATTERNS,
        "test": tuple(DEFAULT_TEST_PATTERNS),
        "docs": tuple(DEFAULT_DOCS_PATTERNS),
        "config": tuple(DEFAULT_CONFIG_PATTERNS),
    }
    return {kind: GitIgnoreSpec.from_lines(patterns) for kind, patterns in lists.items()}


def keyword_only_kinds() -> frozenset[str]:
    """The kinds indexed without vectors: data files always, vendored and generated code unless
    :data:`EMBED_THIRD_PARTY`."""
    return NEVER_EMBEDDED_KINDS if EMBED_THIRD_PARTY else NEVER_EMBEDDED_KINDS | KEYWORD_ONLY_KINDS


def kind_of_path(path: str) -> Kind:
    """The kind of workspace-relative POSIX ``path`` from its name alone (no generated marker or
    numeric-table check: :func:`classify` adds those)."""
    for kind, spec in _specs().items():
        if spec.match_file(path):
            return cast(Kind, kind)
    return "source"


def numeric_table(text: str) -> bool:
    """Whether ``text`` (at least :data:`TABLE_MIN_CHARS` characters) is mostly numeric literals and
    separators (over :data:`TABLE_SHARE` of its non-blank characters): a generated lookup table
    such as a Unicode width table in C."""
    if len(text) < TABLE_MIN_CHARS:
        return False
    solid = len(text) - sum(text.count(c) for c in " \t\r\n")
    numeric = sum(len(m) for m in _NUMERIC.findall(text))
    return solid > 0 and numeric / solid > TABLE_SHARE


def classify(path: str, text: str, language: str) -> Kind:
    """The kind of the file at ``path`` holding ``text`` whose chunk language is ``language``.

    Name rules first (:func:`kind_of_path`); a file the name calls ``source`` or ``test`` is
    ``generated`` when one of its first :data:`MARKER_LINES` lines carries a generated marker
    (``Code generated ... DO NOT EDIT.``, ``@generated``, ``auto-generated``) or, for code, when it
    is a numeric table (:func:`numeric_table`).
    """
    kind = kind_of_path(path)
    if kind not in ("source", "test"):
        return kind
    head = "\n".join(text[:4000].splitlines()[:MARKER_LINES])
    if _MARKER.search(head):
        return "generated"
    if language not in ("text", "markdown", "rst") and numeric_table(text):
        return "generated"
    return kind
