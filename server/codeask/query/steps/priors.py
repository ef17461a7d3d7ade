"""File priors of retrieval: how a file's kind and the question's stated intent scale its fused score.

A file's fused score (:func:`codeask.query.steps.retrieve.fuse`) is multiplied by its prior:

* vendored, generated and data files (:mod:`codeask.index.kinds`): :data:`THIRD_PARTY_FACTOR`
  (0.25: below the project's own code, and below its tests and docs at :data:`DOWNWEIGHT_FACTOR` 0.5),
  unless the question names that kind ("the vendored yaml parser");
* when the question names languages ("the C code", "in TypeScript", :mod:`codeask.query.intent`):
  files in other languages, :data:`DOWNWEIGHT_FACTOR`;
* a hub file (one in the top files of most questions, measured from the index:
  :mod:`codeask.index.hubs`): :func:`~codeask.index.hubs.hub_factor` (0.5 to 1), while
  :data:`HUB_DAMPING`;
* a file the question names by its file name, or that alone defines a type or qualified name the
  question spells as code (:func:`codeask.query.steps.identifiers.defining_paths`): 1, whatever the above.

Tests, docs and configs are downweighted by path (``retrieval.downweight_patterns``, whose defaults
are those kinds' patterns); :func:`lifted` tells when the question asks for that kind, which lifts it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pathspec

from codeask.index.hubs import hub_factor
from codeask.index.kinds import kind_of_path
from codeask.query.intent import Intent
from codeask.settings import RetrievalSettings

if TYPE_CHECKING:  # the store module imports LanceDB; priors only read a hit's fields
    from codeask.index.rows import Hit

__all__ = [
    "HUB_DAMPING",
    "THIRD_PARTY_KINDS",
    "DOWNWEIGHT_FACTOR",
    "THIRD_PARTY_FACTOR",
    "downweight_rule",
    "file_prior",
    "lifted",
    "EXAMPLE_PATTERNS",
]

#: Fused score multiplier of a downweighted file (tests, docs, configs, examples, files in a
#: language the question does not ask for): half, so implementation files come first while a test
#: that matches much better still ranks (shared/eval/FINDINGS.md, point 3). Was
#: ``retrieval.downweight_factor``.
DOWNWEIGHT_FACTOR = 0.5
#: Fused score multiplier of vendored, generated and data files: below the project's own code and
#: below its tests and docs (:data:`DOWNWEIGHT_FACTOR`), unless the question names the file or the
#: kind. Was ``retrieval.third_party_factor``.
THIRD_PARTY_FACTOR = 0.25

#: Whether hub files are damped (:func:`~codeask.index.hubs.hub_factor`): on, as the hub
#: measure of issue 29 found a hub (a settings or registry module) in the top files of most questions
#: it did not name; tests turn it off to see the undamped ranking. Was ``retrieval.hub_damping``.
HUB_DAMPING = True

#: Kinds ranked at :data:`THIRD_PARTY_FACTOR`.
THIRD_PARTY_KINDS = frozenset({"vendored", "generated", "data"})


def file_prior(
    intent: Intent,
    named: Callable[[str], bool],
    hubs: Mapping[str, Mapping[str, float]] | None = None,
) -> Callable[[str, Hit], float]:
    """The prior of a file of a root, from its best hit: a multiplier in ``[0, 1]`` (see the
    module docstring).

    Args:
        intent: what the question asks for (:func:`codeask.query.intent.question_intent`).
        named: whether the question names a path's file (``names_file``, ``defining_paths``).
        hubs: ``{root: {path: k-occurrence share}}`` (:func:`codeask.index.hubs.load_hubs`).
    """
    hubs = hubs or {}

    def prior(root: str, hit: Hit) -> float:
        if named(hit.path):
            return 1.0
        factor = 1.0
        if HUB_DAMPING:
            factor *= hub_factor(hubs.get(root, {}).get(hit.path, 0.0))
        if hit.kind in THIRD_PARTY_KINDS and hit.kind not in intent.kinds:
            factor *= THIRD_PARTY_FACTOR
        if intent.languages and hit.language not in intent.languages:
            factor *= DOWNWEIGHT_FACTOR
        return factor

    return prior


#: The example programs' folders, among ``retrieval.downweight_patterns``' defaults (gitignore syntax).
EXAMPLE_PATTERNS = ("example/", "examples/")


@functools.lru_cache(maxsize=1)
def _examples() -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(EXAMPLE_PATTERNS)


def lifted(intent: Intent, path: str) -> bool:
    """Whether a downweighted file at root-relative POSIX ``path`` ranks as code for this question:
    it asks for that file's kind (:func:`codeask.index.kinds.kind_of_path`: "the Go tests", "the
    docs"), or for examples and the file is one (:data:`EXAMPLE_PATTERNS`: "building the examples")."""
    if not intent.kinds:
        return False
    if kind_of_path(path) in intent.kinds:
        return True
    return "example" in intent.kinds and _examples().match_file(path)


def downweight_rule(settings: RetrievalSettings) -> Callable[[str], bool]:
    """Whether a root-relative POSIX path matches ``retrieval.downweight_patterns`` (gitignore
    syntax): such a file's fused score is multiplied by :data:`DOWNWEIGHT_FACTOR`."""
    return pathspec.GitIgnoreSpec.from_lines(settings.downweight_patterns).match_file
