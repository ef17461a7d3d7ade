"""Scoring for ``bench/answers.py``: key-fact recall, citations, cut answers, seconds beside the time
budget, the result object and its printed summary (see that script's docstring for what each means)."""

from __future__ import annotations

import os
import re
import subprocess

from common import peak_rss_mb

_CITE = re.compile(r"\[(\d+)\]")
#: Issue 30's goals (the defaults of ``llm.first_token_seconds`` / ``llm.answer_seconds``): median
#: seconds from asking to the first word and to the end. Constants here, so that the bench also
#: runs the code from before those settings (the "before" run of a before/after comparison).
GOALS = {"first_token_seconds": 20.0, "answer_seconds": 90.0}
#: Issue 30's goal for :func:`plain_link_share`.
PLAIN_LINK_GOAL = 0.9


def key_fact_recall(text: str, facts: list[str]) -> float:
    """Share of ``facts`` named in ``text`` (whole word; ``a.b`` style names match on any part)."""
    found = sum(1 for f in facts if re.search(rf"(?<![A-Za-z0-9_]){re.escape(f)}(?![A-Za-z0-9_])", text))
    return found / len(facts)


def sent_text(out: dict) -> str:
    """The code and labels of the documents the model was sent (``sources``' spans; ``key_facts_sent``
    is the share of key facts they name: what the model could have named)."""
    spans = [sp for s in out.get("sources") or [] for sp in s.get("spans") or []]
    return "\n".join(f"{sp.get('symbol') or ''}\n{sp.get('content') or ''}" for sp in spans)


def facts_found(question: str, facts: list[str], text: str, out: dict, keys: tuple[str, str]) -> dict:
    """The key-fact part of a row both answer benches write: ``question``, ``key_facts`` and, under
    ``keys``, the share of ``facts`` that ``text`` names (the answer, or the prompt's snippets) and
    that the documents sent name (:func:`sent_text` of ``out``, the ``ask --json`` object)."""
    recall, sent = keys
    return {
        "question": question,
        "key_facts": facts,
        recall: round(key_fact_recall(text, facts), 3),
        sent: round(key_fact_recall(sent_text(out), facts), 3),
    }


def has_model_citation(out: dict) -> bool:
    """Whether the model itself wrote at least one valid ``[n]`` (a number of a document it was given)."""
    if "citations" not in out:
        return False
    text = out.get("answer") or ""
    n_docs = len(out.get("documents") or out.get("sources") or [])
    return any(1 <= int(n) <= n_docs for n in _CITE.findall(text))


def has_valid_citation(out: dict) -> bool:
    """Whether the answer cites at least one document it was given: a valid model-written ``[n]``, the
    exact relative path of one of its sources, or a citation codeask attributed to a paragraph from
    the names it uses (``citations_attributed`` in the JSON)."""
    text = out.get("answer") or ""
    if has_model_citation(out) or out.get("attributed_citations"):
        return True
    return any(s["path"] in text for s in out.get("sources") or [])


def looks_cut(text: str) -> bool:
    """An answer that ends inside a code block or without closing punctuation."""
    stripped = text.rstrip()
    if stripped.count("```") % 2:
        return True
    return bool(stripped) and stripped[-1] not in ".!?)`*|]:>\"'"


def score_row(pin: str, question: str, facts: list[str], out: dict) -> dict:
    """One question's scores from its ``codeask ask --json`` object ``out`` (kept in the row as
    ``answer_json``)."""
    answered = bool(out.get("llm")) and not out.get("error")
    # the ranked-sources fallback (after an LLM error) quotes code: it is no answer, it scores 0
    text = (out.get("answer") or "") if answered else ""
    return {
        "sdist": pin,
        **facts_found(question, facts, text, out, ("key_fact_recall", "key_facts_sent")),
        "model_citation": answered and has_model_citation(out),
        "model_citation_paragraph_share": out.get("citations") if answered else 0.0,
        "model_citation_mismatched_share": (out.get("citations_mismatched") or 0.0) if answered else 0.0,
        "valid_citation": answered and has_valid_citation(out),
        "truncated": bool(out.get("truncated")),
        "finish_reason": out.get("finish_reason"),
        "looks_cut": looks_cut(text),
        "error": out.get("error"),
        "llm_answered": answered,
        "sources": [s["path"] for s in out.get("sources") or []],
        "second_part": out.get("second_part"),
        "answer": out.get("answer") or "",
        "answer_json": out,
    }


def median(values: list[float]) -> float | None:
    """The median of ``values`` (``None`` when empty)."""
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def right_document_share(rows: list[dict]) -> float | None:
    """Over the answers' paragraphs with a valid model-written ``[n]``: the share whose citations point
    at a document holding the code they name (not ``citations_mismatched``), each answer weighted by
    its paragraphs (counted as :func:`codeask.query.citations.check_citations` counts them)."""
    from codeask.query.citations import check_citations

    cited = right = 0.0
    for r in rows:
        out = r["answer_json"]
        if not r["llm_answered"] or not out.get("citations"):
            continue
        paragraphs = check_citations(out.get("answer") or "", []).paragraphs
        cited += out["citations"] * paragraphs
        right += (out["citations"] - (out.get("citations_mismatched") or 0.0)) * paragraphs
    return round(right / cited, 3) if cited else None


def prompt_documents(out: dict) -> list:
    """The documents the model saw, rebuilt from an ``ask --json`` object: ``documents[]`` numbers and
    line ranges, the text from the sources' ``spans`` (the span holding the lines sent: the prompt
    budget cuts a document to some of its lines)."""
    from codeask.query.pipeline import Document

    spans = [(source, span) for source in out.get("sources") or [] for span in source.get("spans") or []]
    docs = []
    for d in out.get("documents") or []:
        source, span = next(
            (source, span)
            for source, span in spans
            if source["path"] == d["path"] and span["start_line"] <= d["start_line"] <= span["end_line"]
        )
        first = d["start_line"] - span["start_line"]
        lines = span["content"].split("\n")[first : first + d["end_line"] - d["start_line"] + 1]
        root_label = source["label"][: -len(source["path"])].rstrip("/") if source.get("label") else ""
        docs.append(
            Document(
                d["path"],
                source["root"],
                d["start_line"],
                d["end_line"],
                span.get("symbol") or "",
                "",
                "\n".join(lines),
                root_label=root_label,
            )
        )
    return docs


def plain_link_share(rows: list[dict]) -> tuple[float | None, int]:
    """Over the answers' paragraphs shown with model-written ``[n]`` as plain links (a valid ``[n]``
    not marked ``*(unverified)*``): ``(share, paragraphs)``, the share whose links point at a
    document holding the code the paragraph names (not mismatched, or re-pointed to the one document
    defining it), from :func:`codeask.query.citations.check_citations` on the documents the model
    was given, and how many such paragraphs there were. Answers without ``documents`` in their JSON
    (code from before that key) are left out."""
    from codeask.query.citations import check_citations

    shown = right = 0
    for r in rows:
        out = r["answer_json"]
        if not r["llm_answered"] or not out.get("documents"):
            continue
        check = check_citations(out.get("answer") or "", prompt_documents(out))
        cited = round(check.share * check.paragraphs)
        unverified = {u["paragraph"] for u in check.unverified}
        repointed = {p["paragraph"] for p in check.repointed}
        wrong = set(check.mismatched) - repointed - unverified
        shown += cited - len(unverified)
        right += cited - len(unverified) - len(wrong)
    return (round(right / shown, 3) if shown else None), shown


def timing(rows: list[dict]) -> dict:
    """Median seconds to the first word and to the end, beside issue 30's goals (:data:`GOALS`)."""
    first = median([r["first_token_seconds"] for r in rows if r.get("first_token_seconds") is not None])
    end = median([r["seconds"] for r in rows])
    return {
        "first_token_seconds_median": first,
        "seconds_median": end,
        "budget": dict(GOALS),
        "within_budget": {
            "first_token": first is not None and first <= GOALS["first_token_seconds"],
            "end": end is not None and end <= GOALS["answer_seconds"],
        },
    }


def second_parts(rows: list[dict]) -> dict:
    """How many answers had a second part (``second_part`` in the answer JSON: the code from before
    that key counts none), how many of them kept a line, and the lines and documents they kept."""
    ran = [r["second_part"] for r in rows if r.get("second_part")]
    kept = [p for p in ran if p["lines_kept"]]
    return {
        "ran": len(ran),
        "kept_lines": len(kept),
        "lines_kept": sum(p["lines_kept"] for p in ran),
        "documents_sent": sum(len(p["sent"]) for p in ran),
    }


def recall_by_part(rows: list[dict], first: int = 12) -> dict:
    """Key-fact recall over the ``first`` questions (issue 30's goal: those where 0.556 was measured)
    and over the rest (``None`` when there are none), by each row's question ``number`` (a run started
    past question 1, ``--start``), else its place."""
    numbers = [r.get("number", i) for i, r in enumerate(rows, 1)]
    head = [r for r, n in zip(rows, numbers) if n <= first]
    rest = [r for r, n in zip(rows, numbers) if n > first]
    return {
        f"key_fact_recall_first_{first}": round(sum(r["key_fact_recall"] for r in head) / len(head), 3)
        if head
        else None,
        "key_fact_recall_rest": round(sum(r["key_fact_recall"] for r in rest) / len(rest), 3) if rest else None,
    }


def uptime() -> str:
    """``uptime``'s line (the load averages the machine's other work left), or ``""`` without it."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def summarize(rows: list[dict], meta: dict) -> dict:
    """The result object: ``meta``, means over ``rows`` and the rows themselves."""
    n = len(rows)
    answered = [r for r in rows if r["llm_answered"]]
    stage_names = sorted({s for r in rows for s in r["stages"]})
    plain_share, plain_paragraphs = plain_link_share(rows)
    return {
        **meta,
        "questions": n,
        "key_fact_recall": round(sum(r["key_fact_recall"] for r in rows) / n, 3),
        **recall_by_part(rows),
        "key_facts_sent": round(sum(r.get("key_facts_sent", 0.0) for r in rows) / n, 3),
        "model_citation_share": round(sum(r["model_citation"] for r in rows) / n, 3),
        "model_citation_paragraph_share": round(sum(r["model_citation_paragraph_share"] or 0.0 for r in rows) / n, 3),
        "model_citation_mismatched_share": round(
            sum(r.get("model_citation_mismatched_share", 0.0) for r in rows) / n, 3
        ),
        "valid_citation_share": round(sum(r["valid_citation"] for r in rows) / n, 3),
        "truncated": sum(r["truncated"] for r in rows),
        "looks_cut": sum(r["looks_cut"] for r in rows),
        "errors": sum(1 for r in rows if r["error"]),
        "llm_answered": len(answered),
        "key_fact_recall_llm_answered": round(sum(r["key_fact_recall"] for r in answered) / max(1, len(answered)), 3),
        "seconds_mean": round(sum(r["seconds"] for r in rows) / n, 1),
        **timing(rows),
        "right_document_share": right_document_share(rows),
        "plain_link_right_share": plain_share,
        "plain_link_paragraphs": plain_paragraphs,
        "plain_link_goal": PLAIN_LINK_GOAL,
        "second_parts": second_parts(rows),
        "stage_seconds_mean": {s: round(sum(r["stages"].get(s, 0.0) for r in rows) / n, 2) for s in stage_names},
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_average": {"start": meta["load_average_start"], "end": [round(x, 2) for x in os.getloadavg()]},
        "uptime": {"start": meta.get("uptime_start", ""), "end": uptime()},
        "documents_sent": [len(r["answer_json"].get("documents") or []) for r in rows],
        "rows": rows,
    }


_LABELS = {
    "model_citation_share": "answers with >= 1 valid model-written [n]",
    "model_citation_paragraph_share": "paragraphs with a valid model-written [n] (mean)",
    "model_citation_mismatched_share": "paragraphs whose model [n] cite none of the documents their names point to",
    "valid_citation_share": "answers with >= 1 valid citation (model or attributed)",
    "right_document_share": "cited paragraphs whose [n] point at the document holding the named code",
    "plain_link_right_share": "the same after re-pointing, over paragraphs shown with plain [n] links",
}


def report(result: dict, path) -> None:
    """Print ``result``'s summary lines (a key an older result lacks prints ``None``)."""
    print()
    for key in (
        "label",
        "model",
        "questions",
        "key_fact_recall",
        "key_fact_recall_first_12",
        "key_fact_recall_rest",
        "key_facts_sent",
        "second_parts",
        "model_citation_share",
        "model_citation_paragraph_share",
        "model_citation_mismatched_share",
        "valid_citation_share",
        "truncated",
        "looks_cut",
        "errors",
        "llm_answered",
        "key_fact_recall_llm_answered",
        "right_document_share",
        "plain_link_right_share",
        "plain_link_paragraphs",
        "seconds_mean",
        "first_token_seconds_median",
        "seconds_median",
        "budget",
        "within_budget",
        "load_average",
        "uptime",
    ):
        print(f"{key:32} {result.get(key)}" + (f"   ({_LABELS[key]})" if key in _LABELS else ""))
    for s, v in result["stage_seconds_mean"].items():
        print(f"  stage {s:14} {v:7.2f} s")
    print(f"\nwritten to {path}")
