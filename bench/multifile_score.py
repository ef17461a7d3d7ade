"""Scoring helpers of ``bench/multifile.py``: what counts as code, whole-file BM25, per-question scores.

Kept apart from codeask on purpose: the bench's idea of "code" and its BM25 baseline must not move
when codeask's own file classification or keyword search changes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

DEPTH = 10

#: Extensions of source files of programming languages (file names compared lower-cased). Everything
#: else is *non-code*: documentation (.md, .rst, .txt), configuration and build files (.toml, .yml,
#: .json, Makefile, Dockerfile, CMakeLists.txt), data and lock files, translations (.xlf, .po),
#: markup and styles (.html, .css, .svg), licences and changelogs.
# fmt: off
CODE_EXTENSIONS = frozenset((
    ".py", ".pyi", ".go", ".rs", ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".java", ".kt",
    ".kts", ".scala", ".groovy", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm", ".cs",
    ".fs", ".vb", ".swift", ".rb", ".php", ".pl", ".pm", ".lua", ".sh", ".bash", ".zsh", ".ps1", ".dart", ".ex",
    ".exs", ".erl", ".hrl", ".hs", ".ml", ".mli", ".clj", ".cljs", ".elm", ".jl", ".r", ".zig", ".nim", ".v",
    ".sql", ".vue", ".svelte", ".proto",
))
# fmt: on


def is_code(path: str) -> bool:
    """Whether ``path`` is a source file of a programming language (by extension, :data:`CODE_EXTENSIONS`)."""
    return Path(path).suffix.lower() in CODE_EXTENSIONS


# ------------------------------------------------------------------------------------------- BM25
_WORD = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-cased words of ``text``: every identifier whole, plus its camelCase / snake_case parts."""
    out = []
    for word in _WORD.findall(text):
        low = word.lower()
        out.append(low)
        parts = [p.lower() for piece in word.split("_") for p in _CAMEL.findall(piece)]
        if len(parts) > 1:
            out.extend(parts)
    return out


class BM25:
    """Okapi BM25 (k1 = 1.5, b = 0.75, Lucene's idf ``log(1 + (N - n + .5) / (n + .5))``) over one
    document per file: the file's path words and its text."""

    def __init__(self, docs: dict[str, str], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.paths = list(docs)
        self.tf = [Counter(tokens(path + " " + docs[path])) for path in self.paths]
        self.length = [sum(tf.values()) for tf in self.tf]
        self.avg = sum(self.length) / max(1, len(self.length))
        df: Counter[str] = Counter()
        for tf in self.tf:
            df.update(tf.keys())
        n = len(self.paths)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def rank(self, query: str, k: int = DEPTH) -> list[str]:
        """The ``k`` best paths for ``query``, best first (files sharing no word with it left out)."""
        terms = [t for t in set(tokens(query)) if t in self.idf]
        scores = []
        for i, tf in enumerate(self.tf):
            norm = self.k1 * (1 - self.b + self.b * self.length[i] / self.avg)
            s = sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in terms if t in tf)
            if s > 0:
                scores.append((s, self.paths[i]))
        scores.sort(key=lambda x: (-x[0], x[1]))
        return [p for _, p in scores[:k]]


def text_files(root: Path, max_bytes: int = 1_000_000) -> dict[str, str]:
    """``{relative posix path: text}`` of every UTF-8 text file under ``root`` up to ``max_bytes``
    (binary files, larger files and ``.git`` left out): what a user's checkout holds."""
    out = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or ".git" in path.relative_to(root).parts or path.stat().st_size > max_bytes:
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        try:
            out[path.relative_to(root).as_posix()] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return out


# ------------------------------------------------------------------------------------------ scores
def score(ranked: Sequence[str], needed: Iterable[str]) -> dict[str, float]:
    """One question's scores from its ranked distinct files (only the first :data:`DEPTH` count):
    ``rr`` (1 / rank of the first needed file, 0 when none is in the top), ``all`` (1 when every
    needed file is in the top), ``any``, ``recall`` (share of needed files in the top),
    ``noncode`` (share of the top that is not code; 0 for an empty list) and ``returned``."""
    top = list(ranked[:DEPTH])
    need = set(needed)
    hit = need & set(top)
    rr = next((1.0 / i for i, p in enumerate(top, 1) if p in need), 0.0)
    return {
        "rr": rr,
        "all": float(hit == need),
        "any": float(bool(hit)),
        "recall": len(hit) / len(need),
        "noncode": sum(not is_code(p) for p in top) / len(top) if top else 0.0,
        "returned": float(len(top)),
    }


def mean(rows: list[dict[str, float]], key: str) -> float:
    """Mean of ``key`` over ``rows`` rounded to 3 places (0.0 for no rows)."""
    return round(sum(r[key] for r in rows) / len(rows), 3) if rows else 0.0
