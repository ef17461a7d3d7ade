"""``codeask eval``: questions files, the Ragas export, retrieval metrics and the LLM judge."""

from __future__ import annotations

import json

import pytest

from codeask.cli import main
from codeask.eval.metrics import RetrievalScores, distinct_files, file_recall_at_k, reciprocal_rank
from codeask.eval.questions import QuestionsError, load_questions
from codeask.eval.ragas import Ragas
from codeask.query.pipeline import Document, Query

ROWS = [
    {"question": "How is shipping priced?", "ground_truth": "A flat fee plus a rate per kg.",
     "expected_files": ["src/shop/shipping.py"]},
    {"query": "Which coupons exist?", "ground_truth": "SAVE10 and HALF.", "gold_files": ["src/shop/pricing.py"]},
    {"question": "How is the cart total computed?", "ground_truth": "Sum of prices, then the discount."},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_writes_rows_in_file_order(sample_workspace, tmp_path, llm_env, capsys):
    qfile = write_jsonl(tmp_path / "q.jsonl", ROWS)
    out = tmp_path / "ragas.json"
    rc = main(["eval", str(sample_workspace), "--questions", str(qfile), "--out", str(out), "--json"])
    assert rc == 0
    text = out.read_text()
    rows = json.loads(text)
    assert text == json.dumps(rows, indent=2, sort_keys=True) + "\n"
    assert [r["question"] for r in rows] == [r.get("question") or r.get("query") for r in ROWS]
    for row, src in zip(rows, ROWS):
        assert set(row) == {"question", "answer", "contexts", "ground_truth"}
        assert row["ground_truth"] == src["ground_truth"]
        assert row["answer"] == "FAKE ANSWER"
        assert row["contexts"] and all(isinstance(c, str) and c for c in row["contexts"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["questions"] == 3 and summary["judge"] is None
    retrieval = summary["retrieval"]
    assert set(retrieval) == {"recall@1", "recall@5", "recall@10", "mrr"}
    assert all(0.0 <= v <= 1.0 for v in retrieval.values())
    assert retrieval["recall@5"] == 1.0  # both gold files are among the 4 files of the workspace


def test_contexts_are_the_documents_as_retrieved(sample_workspace, tmp_path, llm_env):
    qfile = write_jsonl(tmp_path / "q.jsonl", ROWS[:1])
    out = tmp_path / "r.json"
    assert main(["eval", str(sample_workspace), "--questions", str(qfile), "--out", str(out),
                 "--max-files", "1", "--json"]) == 0
    row = json.loads(out.read_text())[0]
    assert len(row["contexts"]) > 1  # one_per_file kept one file; the export keeps every retrieved chunk


def test_duplicate_questions_fail(sample_workspace, tmp_path, capsys):
    qfile = write_jsonl(tmp_path / "q.jsonl", [ROWS[0], {"query": ROWS[0]["question"]}])
    assert main(["eval", str(sample_workspace), "--questions", str(qfile), "--no-llm"]) == 1
    err = capsys.readouterr().err
    assert "duplicate question" in err and "How is shipping priced?" in err


def test_record_ground_truth(sample_workspace, tmp_path, llm_env, capsys):
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps([{"question": r.get("question") or r["query"]} for r in ROWS]))
    out = tmp_path / "baseline.json"
    assert main(["eval", str(sample_workspace), "--questions", str(qfile), "--out", str(out),
                 "--record-ground-truth", "--json"]) == 0
    rows = json.loads(out.read_text())
    assert all(r["ground_truth"] == r["answer"] == "FAKE ANSWER" for r in rows)
    assert json.loads(capsys.readouterr().out)["retrieval"] is None
    # the export loads back as a questions file, ground truths kept
    assert [q.ground_truth for q in load_questions(out)] == ["FAKE ANSWER"] * 3


def test_no_llm_table_and_yaml(sample_workspace, tmp_path, capsys):
    qfile = tmp_path / "q.yaml"
    qfile.write_text("- question: How is shipping priced?\n  expected_files: [src/shop/shipping.py]\n- Which coupons exist?\n")
    out = tmp_path / "r.json"
    assert main(["eval", str(sample_workspace), "--questions", str(qfile), "--out", str(out), "--no-llm"]) == 0
    printed = capsys.readouterr().out
    assert "mean" in printed and "RAGAS dataset written to" in printed
    rows = json.loads(out.read_text())
    assert rows[0]["answer"].startswith("Most relevant code for")


def test_judge_scores(sample_workspace, tmp_path, llm_env, capsys):
    def responder(request):
        fmt = request.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name")
        if name == "Claims":
            return {"claims": ["claim one", "claim two"]}
        if name == "Verdicts":
            return {"verdicts": [{"claim": "claim one", "supported": True, "reason": ""},
                                 {"claim": "claim two", "supported": False, "reason": ""}]}
        return "FAKE ANSWER"

    llm_env.responder = responder
    qfile = write_jsonl(tmp_path / "q.jsonl", ROWS[:2])
    out = tmp_path / "r.json"
    assert main(["eval", str(sample_workspace), "--questions", str(qfile), "--out", str(out),
                 "--judge-model", "judge-x", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    judge = summary["judge"]
    assert judge["faithfulness"] == judge["answer_recall"] == judge["context_recall"] == 0.5
    assert judge["model"].endswith("judge-x")
    assert all(q["judge"]["faithfulness"] == 0.5 for q in summary["per_question"])
    models = {r.get("model") for r in llm_env.requests if r.get("response_format")}
    assert models == {"judge-x"}


CUT_VERDICTS = '{"verdicts": [{"claim": "bad claim", "supported": false, "reason": "no"}, {"claim": "bad cl'


@pytest.mark.parametrize(
    ("bad_reply", "end", "expected"),
    [
        (CUT_VERDICTS, "length", "cut off"),  # stopped at max_tokens
        (CUT_VERDICTS, None, "does not match Verdicts"),  # ended "stop" mid-object: an inner object parses
        ({"verdicts": [{"claim": "bad claim", "supported": True, "reason": ""}]}, None, "1 verdicts for 2 claims"),
    ],
)
def test_judge_reply_that_cannot_be_scored_is_a_row_error_left_out_of_the_means(
    sample_workspace, tmp_path, llm_env, capsys, bad_reply, end, expected
):
    def responder(request):
        fmt = request.get("response_format") or {}
        name = (fmt.get("json_schema") or {}).get("name")
        text = json.dumps(request.get("messages"))
        llm_env.stream_script.pop("end", None)
        if name == "Claims":  # the coupons row's answer splits into claims the judge then fails on
            return {"claims": ["bad claim", "bad claim two"] if "coupons" in text else ["claim one", "claim two"]}
        if name == "Verdicts":
            if "bad claim" in text:
                if end:
                    llm_env.stream_script["end"] = end
                return bad_reply
            return {"verdicts": [{"claim": "claim one", "supported": True, "reason": ""},
                                 {"claim": "claim two", "supported": False, "reason": ""}]}
        return "FAKE ANSWER"

    llm_env.responder = responder
    qfile = write_jsonl(tmp_path / "q.jsonl", ROWS[:2])
    args = ["eval", str(sample_workspace), "--questions", str(qfile), "--out", str(tmp_path / "r.json"),
            "--judge-model", "judge-x", "--concurrency", "1"]
    assert main([*args, "--json"]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    good, bad = summary["per_question"]
    assert bad["judge"] is None and bad["error"].startswith("judge: ") and expected in bad["error"]
    assert good["judge"] == {"faithfulness": 0.5, "answer_recall": 0.5, "context_recall": 0.5}
    judge = summary["judge"]
    assert (judge["scored"], judge["errors"]) == (1, 1) and judge["model"] == "openai:judge-x"
    assert judge["faithfulness"] == good["judge"]["faithfulness"]  # the failed row is not averaged in
    assert expected in captured.err

    assert main(args) == 1  # the table names the judge model and the rows left out
    printed = capsys.readouterr().out
    assert "Judge: openai:judge-x; 1 of 2 answers scored; 1 judge errors" in printed


def test_judge_table(sample_workspace, tmp_path, llm_env, capsys):
    qfile = write_jsonl(tmp_path / "q.jsonl", ROWS[:1])
    assert main(["eval", str(sample_workspace), "--questions", str(qfile), "--out", str(tmp_path / "r.json"),
                 "--judge-model", "judge-x"]) == 0
    printed = capsys.readouterr().out
    assert "faithful" in printed and "mean" in printed
    assert "Judge: openai:judge-x; 1 of 1 answers scored" in printed


def test_questions_formats_and_errors(tmp_path):
    qs = load_questions(write_jsonl(tmp_path / "a.jsonl", ROWS))
    assert [q.expected_files for q in qs] == [["src/shop/shipping.py"], ["src/shop/pricing.py"], []]
    (tmp_path / "bad.json").write_text('[{"ground_truth": "x"}]')
    with pytest.raises(QuestionsError, match="missing 'question'"):
        load_questions(tmp_path / "bad.json")
    shared = tmp_path / "shared.jsonl"
    write_jsonl(shared, [{"id": "x-1", "query": "Q?", "gold_files": ["src/a.py"], "sdist": "a==1"}])
    assert load_questions(shared)[0].id == "x-1"


def test_metrics():
    ranked = distinct_files(["a", "a", "b", "c", "b", "d"])
    assert ranked == ["a", "b", "c", "d"]
    assert file_recall_at_k(ranked, ["c", "z"], 1) == 0.0
    assert file_recall_at_k(ranked, ["c", "z"], 5) == 0.5
    assert reciprocal_rank(ranked, ["c"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(ranked, ["z"]) == 0.0
    scores = RetrievalScores()
    scores.add(ranked, ["a"])
    scores.add(ranked, [])
    scores.add(ranked, ["z"])
    assert scores.mean() == {"recall@1": 0.5, "recall@5": 0.5, "recall@10": 0.5, "mrr": 0.5}


def test_ragas_evaluator_unknown_question_and_export():
    ragas = Ragas([("What is Rust?", "A programming language")])
    assert json.loads(ragas.to_json()) == [
        {"answer": "", "contexts": [], "ground_truth": "A programming language", "question": "What is Rust?"}
    ]
    with pytest.raises(KeyError, match="Question not found"):
        ragas("retrieved", Query("Other?"))
    q = Query("What is Rust?")
    q.retrieved("retrieve", [Document("a.rs", "/r", 1, 2, "", "rust", "fn main() {}")])
    ragas("retrieved", q)
    q.reordered("rerank", [])
    q.answered("answer", "A language.")
    ragas("answered", q)
    row = json.loads(ragas.to_json())[0]
    assert row["contexts"] == ["fn main() {}"] and row["answer"] == "A language."
    assert Ragas.parse(ragas.to_json()).rows()[0]["ground_truth"] == "A programming language"


def test_jsonl_rows_may_hold_a_raw_line_separator(tmp_path):
    """Issue 18.2: JSON strings may hold a raw U+2028; JSON Lines rows end at newlines only."""
    from codeask.eval.questions import load_questions

    qfile = tmp_path / "q.jsonl"
    qfile.write_text('{"question": "Where is the\u2028redirect handled?"}\n{"question": "second"}\n', encoding="utf-8")
    questions = load_questions(qfile)
    assert [q.question for q in questions] == ["Where is the\u2028redirect handled?", "second"]
