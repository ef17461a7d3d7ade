"""Reciprocal rank fusion at the file level, for the ask retriever and explain's related code.

Each file is scored by its best chunk in each ranking::

    file_score(f) = sum over rankings r of  weight(r) / (rrf_k + rank of f among r's distinct files)

Chunks within a file are ordered by their own chunk-level RRF score relative to the file's best
chunk, and a file's boilerplate chunks (import blocks, module headers) rank below its other
matching chunks (:func:`demote_boilerplate`), its chunks of a definition the question names above
them (:func:`promote_named`). Fusing per file rather than per chunk is what beat
whole-file BM25 in the prototype (shared/eval/FINDINGS.md, point 3).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from codeask.query.boilerplate import is_boilerplate

if TYPE_CHECKING:  # the store module imports LanceDB; fusion only reads the hits' fields
    from codeask.index.store import Hit

__all__ = ["fuse", "demote_boilerplate", "promote_named", "file_ranking", "BOILERPLATE_FACTOR", "DENSE_BEST"]

#: Chunks of a file whose cosine similarities the dense per-file ranking sums (:func:`file_ranking`).
#: Measured on this repository's benches, one kept index each, against no dense per-file ranking:
#: the 97 how-questions of bench/multifile (all@10 / recall@10 / MRR) .402 / .740 / .797 -> .454 /
#: .771 / .805 at 3, .464 / .772 / .802 summing every chunk, .412 / .748 / .803 summing every chunk at
#: half weight; shared/eval's single-file sets (bench/retrieval.py, answer MRR requests / flask /
#: pytest) .734 / .719 / .725 -> .739 / .705 / .738 at 3, .717 / .696 / .728 summing every chunk.
DENSE_BEST = 3


def file_ranking(hits: Sequence[Hit], best: int | None = None) -> list[Hit]:
    """A per-file ranking of one chunk ranking: each file's best chunk, files ordered by the sum of
    their chunks' scores in ``hits``, or of their first ``best`` chunks' (ties: the file whose best
    chunk ranks first).

    A chunk ranking scores a file by its best chunk only (MaxP), so a file whose matching code is
    spread over many chunks (a ``main.rs`` that parses, walks and prints) loses to a file with one
    dense chunk, while whole-file BM25 finds it. Summing the chunk scores (SumP, the CombSUM of Fox
    and Shaw, TREC-2 1994; SumP / MaxP of Dai and Callan, SIGIR 2019, for passages of one document)
    credits every chunk of a file that matched; :func:`fuse` takes the result as one more ranking,
    so the files a whole-file keyword search finds are candidates without a second index. Over a
    dense ranking the sum is of cosine similarities, of each file's best :data:`DENSE_BEST` chunks: a
    file several of whose chunks are near the question (a module an answer walks through) ranks
    above a file with one nearer chunk, while a long module cannot win by the number of chunks that
    are somewhat near (every chunk is, to a cosine: summing them all lowered the single-file sets'
    MRR, see :data:`DENSE_BEST`).

    Args:
        hits: one ranking, best first, scores higher-is-better and comparable (one BM25 search, or
            one dense search's cosine similarities).
        best: how many of a file's chunks count (its first in ``hits``); all when ``None``.

    Returns:
        One hit per file (its first in ``hits``), best file first.
    """
    total: dict[str, float] = defaultdict(float)
    counted: dict[str, int] = defaultdict(int)
    first: dict[str, Hit] = {}
    for hit in hits:
        first.setdefault(hit.path, hit)
        if best is None or counted[hit.path] < best:
            total[hit.path] += hit.score
            counted[hit.path] += 1
    order = {path: i for i, path in enumerate(first)}
    return [first[path] for path in sorted(first, key=lambda p: (-total[p], order[p]))]


def fuse(
    rankings: Sequence[tuple[float, str, list[Hit]]],
    *,
    rrf_k: int,
    downweighted: Callable[[str], bool],
    factor: float,
    prior: Callable[[str, Hit], float] | None = None,
    named: Callable[[Hit], int] | None = None,
    named_files: int | None = None,
) -> list[tuple[float, float, str, Hit]]:
    """Fuse ranked chunk lists into ``(score, file_score, root, hit)``, best first.

    A chunk's ``score`` is its file's score scaled by the chunk's RRF score relative to the best
    chunk of that file: each file's best chunk scores exactly the file score, so taking the first
    chunk per file yields files in file-score order, while the other chunks of a strong file
    interleave with the best chunks of weaker files.

    Args:
        rankings: ``(weight, root, hits best first)`` per ranking.
        rrf_k: the RRF constant (60 in the literature and here).
        downweighted: whether a path ranks lower.
        factor: multiplier of a downweighted file's score.
        prior: a file's score multiplier from its root and best-ranked hit (kind, language, hub:
            :func:`codeask.query.steps.priors.file_prior`); none when ``None``.
        named: how many parts of a chunk's definition name the question spells, 0 for none
            (:func:`codeask.query.question_words.names_definition`): such chunks lead their file
            (:func:`promote_named`); none when ``None``.
        named_files: how many files, best first, ``named`` reads the chunks of (each read parses a
            chunk; retrieval keeps no more, :func:`~codeask.query.steps.depth.keep_files`); all: ``None``.
    """
    file_score: dict[tuple[str, str], float] = defaultdict(float)
    chunk_score: dict[tuple[str, str], float] = defaultdict(float)
    hits: dict[tuple[str, str], tuple[str, Hit]] = {}
    file_hit: dict[tuple[str, str], Hit] = {}
    for weight, root, ranking in rankings:
        file_rank: dict[str, int] = {}
        for chunk_rank, hit in enumerate(ranking, 1):
            file_hit.setdefault((root, hit.path), hit)
            if hit.path not in file_rank:
                file_rank[hit.path] = len(file_rank) + 1
                file_score[(root, hit.path)] += weight / (rrf_k + file_rank[hit.path])
            chunk_score[(root, hit.id)] += weight / (rrf_k + chunk_rank)
            hits.setdefault((root, hit.id), (root, hit))
    for key in file_score:
        if downweighted(key[1]):
            file_score[key] *= factor
        if prior is not None:
            file_score[key] *= prior(key[0], file_hit[key])
    demote_boilerplate(hits, chunk_score)
    if named is not None:
        promote_named(hits, chunk_score, named, set(sorted(file_score, key=lambda k: -file_score[k])[:named_files]))
    best: dict[tuple[str, str], float] = defaultdict(float)
    for (root, _), (_, hit) in hits.items():
        best[(root, hit.path)] = max(best[(root, hit.path)], chunk_score[(root, hit.id)])
    fused = []
    for (root, _), (_, hit) in hits.items():
        f = file_score[(root, hit.path)]
        fused.append((f * chunk_score[(root, hit.id)] / best[(root, hit.path)], f, root, hit))
    fused.sort(key=lambda t: (-t[0], -t[1], t[2], t[3].path, t[3].start_line))
    return fused


def _by_file(hits: dict[tuple[str, str], tuple[str, Hit]]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """The keys of ``hits`` (``{(root, chunk id): (root, hit)}``) grouped by file (``(root, path)``), in
    first-seen order."""
    by_file: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for key, (root, hit) in hits.items():
        by_file[(root, hit.path)].append(key)
    return by_file


NAMED_LEAD = 0.01
"""How far above a file's best other chunk the chunks whose definition the question names go
(:func:`promote_named`): the first of them to ``1 + NAMED_LEAD`` times its score, the others between,
in their order; small, so the file's other chunks keep their place among other files' chunks."""


def promote_named(
    hits: dict[tuple[str, str], tuple[str, Hit]],
    chunk_score: dict[tuple[str, str], float],
    named: Callable[[Hit], int],
    files: Collection[tuple[str, str]] | None = None,
) -> None:
    """Rank each file's chunks whose definition the question names (``named`` > 0: "how does a request
    context get pushed" names ``RequestContext`` and its methods) above its other matching chunks,
    the most fully named first, then by score, in place on ``chunk_score``. A file's best span is
    then the code the question asks about, where retrieval ranked a neighbour whose docstring repeats
    the question's words first (flask's ``AppContext`` before ``RequestContext``). File scores, and
    so the order of files, do not change.

    Args:
        hits: ``{(root, chunk id): (root, hit)}`` of every fused chunk.
        chunk_score: ``{(root, chunk id): RRF score}``, updated in place.
        named: how many parts of a hit's definition name the question spells (0: none).
        files: the ``(root, path)`` of the files whose chunks are read; all when ``None``.
    """
    for file, keys in _by_file(hits).items():
        if len(keys) < 2 or (files is not None and file not in files):
            continue
        level = {k: named(hits[k][1]) for k in keys}
        lead = sorted((k for k in keys if level[k]), key=lambda k: (-level[k], -chunk_score[k]))
        if not lead or (len(lead) == len(keys) and len(set(level.values())) == 1):
            continue
        best = max(chunk_score[k] for k in keys)
        for i, key in enumerate(lead):
            chunk_score[key] = best * (1 + NAMED_LEAD * (len(lead) - i) / len(lead))


BOILERPLATE_FACTOR = 0.5
"""How far below a file's weakest matching non-boilerplate chunk its boilerplate chunks go
(:func:`demote_boilerplate`): the best boilerplate chunk is scaled to this share of that chunk's
score, the others alike (they keep their order); any factor under 1 puts them last."""


def demote_boilerplate(hits: dict[tuple[str, str], tuple[str, Hit]], chunk_score: dict[tuple[str, str], float]) -> None:
    """Rank each file's boilerplate chunks (imports, module header, :mod:`codeask.query.boilerplate`)
    below every other matching chunk of that file, in place on ``chunk_score``.

    A file whose only matches are boilerplate keeps them as they are; the file's own score is
    untouched, so files keep their order. Only chunks that would lead their file, or follow a
    demoted one, are classified (each classification parses one chunk).

    Args:
        hits: ``{(root, chunk id): (root, hit)}`` of every fused chunk.
        chunk_score: ``{(root, chunk id): RRF score}``, updated in place.
    """
    for keys in _by_file(hits).values():
        if len(keys) < 2:
            continue
        keys.sort(key=lambda k: -chunk_score[k])
        demoted = []
        for key in keys:
            hit = hits[key][1]
            if not is_boilerplate(hit.content, hit.language, hit.symbol):
                break
            demoted.append(key)
        else:  # only boilerplate matched: nothing better to lead with
            continue
        if not demoted:
            continue
        floor = min(chunk_score[k] for k in keys[len(demoted) :])
        scale = floor * BOILERPLATE_FACTOR / chunk_score[demoted[0]]  # the top demoted one has the most
        for key in demoted:
            chunk_score[key] *= scale
