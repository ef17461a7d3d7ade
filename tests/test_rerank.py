"""Rerank through the real fastembed TextCrossEncoder, with a tiny deterministic ONNX cross-encoder.

The model built here scores a (query, document) pair as the sum of a per-token weight over its
tokens (WordLevel tokenizer, whitespace split, lowercased), so a document containing ``express``
(weight 10) outranks one containing ``coupon`` (2), which outranks one with ``discount`` (1).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from codeask.query.options import RetrievalOptions
from codeask.query.pipeline import Document, Query
from codeask.query.steps.rerank import (
    CrossEncoder,
    Rerank,
    RerankModelError,
    load_cross_encoder,
)
from codeask.settings import SettingsError, load_settings

WEIGHTS = {"express": 10.0, "coupon": 2.0, "discount": 1.0}
WORDS = [
    "express", "coupon", "discount", "shipping", "cost", "cart", "total", "price", "the", "a", "of",
    "src", "shop", "py", "def", "return",
]


def build_cross_encoder(folder: Path, weights: dict[str, float] = WEIGHTS) -> Path:
    """Write model.onnx + tokenizer.json + tokenizer_config.json + config.json into ``folder``."""
    import onnx
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"[PAD]": 0, "[UNK]": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": 512, "pad_token": "[PAD]", "unk_token": "[UNK]"})
    )
    (folder / "special_tokens_map.json").write_text(json.dumps({"pad_token": "[PAD]", "unk_token": "[UNK]"}))
    (folder / "config.json").write_text(json.dumps({"pad_token_id": 0}))

    table = np.zeros(len(vocab), dtype=np.float32)
    for word, weight in weights.items():
        table[vocab[word]] = weight
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["weights", "input_ids"], ["token_scores"], axis=0),
            helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["token_scores", "mask"], ["masked"]),
            helper.make_node("ReduceSum", ["masked", "axes"], ["logits"], keepdims=1),
        ],
        "sum_of_token_weights",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=[
            helper.make_tensor("weights", TensorProto.FLOAT, [len(table)], table.tolist()),
            helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    return folder


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return build_cross_encoder(tmp_path_factory.mktemp("xenc") / "tiny-cross-encoder")


def doc(path: str, content: str, score: float = 0.0, symbol: str = "") -> Document:
    return Document(path, "/ws", 1, 3, symbol, "python", content, score, id=path)


DOCS = [
    doc("src/a.py", "the cart total", 0.9),
    doc("src/b.py", "apply the discount", 0.8),
    doc("src/c.py", "shipping cost express", 0.7),
    doc("src/d.py", "a coupon price", 0.6),
    doc("src/e.py", "return the price", 0.5),
]


def retrieved_query(question: str = "what does shipping cost") -> Query:
    q = Query(question)
    q.retrieved("retrieve", list(DOCS))
    return q


def test_fastembed_scores_follow_the_weight_table(model_dir):
    encoder = CrossEncoder(str(model_dir))
    scores = encoder.score("q", ["express", "coupon coupon", "discount", "nothing here", "express coupon"])
    assert scores == pytest.approx([10.0, 4.0, 1.0, 0.0, 12.0])


def test_rerank_orders_by_cross_encoder_and_keeps_top_k(model_dir):
    settings = load_settings(None, env={}, flags={"rerank.model": str(model_dir)})
    step = Rerank(settings=settings, top_k=3)
    q = step(retrieved_query())
    assert [d.path for d in q.documents] == ["src/c.py", "src/d.py", "src/b.py"]
    # rerank scores replace the fused ones (query "what does shipping cost" adds 0 to every pair)
    assert [d.score for d in q.documents] == pytest.approx([10.0, 2.0, 1.0])
    # recorded as a reorder: current unchanged, retrieval event keeps all five in retrieval order
    event = q.history[-1]
    assert event.step == "rerank" and event.before == event.after == q.current
    assert event.data["top_k"] == 3 and event.data["scored"] == 5
    assert [d.path for d in q.retrieved_documents] == [d.path for d in DOCS]
    assert not q.response_transformed


def test_rerank_ties_keep_retrieval_order_and_max_files_caps(model_dir):
    step = Rerank(load_cross_encoder(str(model_dir)), top_k=10, max_files=4)
    q = step(retrieved_query())
    assert [d.path for d in q.documents] == ["src/c.py", "src/d.py", "src/b.py", "src/a.py"]
    q = retrieved_query()
    q.options = RetrievalOptions(max_files=2)
    assert [d.path for d in step(q).documents] == ["src/c.py", "src/d.py"]


def test_rerank_scores_against_the_original_question_not_current():
    seen = []

    class Recorder:
        name = "recorder"

        def score(self, query, texts):
            seen.append((query, list(texts)))
            return [0.0] * len(texts)

    q = retrieved_query("How is shipping priced?")
    q.current = "- How is shipping priced?\n- What calls it?"
    Rerank(Recorder(), top_k=2)(q)
    assert seen[0][0] == "How is shipping priced?"
    # default template: path and symbol before the content
    assert seen[0][1][0] == "src/a.py\nthe cart total"


def test_rerank_template_is_what_the_model_scores(model_dir):
    docs = [doc("src/plain.py", "the cart", 0.9), doc("src/express.py", "the cart", 0.8, symbol="Cart")]
    encoder = load_cross_encoder(str(model_dir))

    def run(template: str | None) -> list[str]:
        flags = {"templates.rerank": template} if template else {}
        settings = load_settings(None, env={}, flags=flags)
        q = Query("cart")
        q.retrieved("retrieve", docs)
        return [d.path for d in Rerank(encoder, settings=settings, top_k=2)(q).documents]

    assert run(None) == ["src/express.py", "src/plain.py"]  # the path is in the default template
    assert run("{{ content }}") == ["src/plain.py", "src/express.py"]  # content only: a tie


def test_missing_model_is_a_clear_error_without_download(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "empty-cache"))
    with pytest.raises(RerankModelError) as info:
        CrossEncoder(None)
    message = str(info.value)
    assert "rerank.model" in message and "model.onnx" in message and "never downloads" in message
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RerankModelError, match=r"no model\.onnx"):
        CrossEncoder(str(empty))
    with pytest.raises(RerankModelError, match="folder not found"):
        CrossEncoder(str(tmp_path / "missing"))
    assert issubclass(RerankModelError, SettingsError)


def test_pipeline_fails_at_build_when_rerank_model_missing(sample_workspace, tmp_path, monkeypatch):
    from codeask.workspace import Workspace

    ws = Workspace([sample_workspace], flags={"rerank.enabled": True, "rerank.model": str(tmp_path / "nope")})
    with pytest.raises(RerankModelError, match=r"rerank\.model"):
        ws.build_pipeline(llm=None)


def test_cli_reports_missing_model_in_one_line(sample_workspace, tmp_path, capsys, user_config):
    from codeask.cli import main

    user_config.write_text(
        f'[rerank]\nenabled = true\nmodel = "{(tmp_path / "nope").as_posix()}"\n'
    )
    assert main(["ask", str(sample_workspace), "shipping?", "--no-llm", "--no-update"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "rerank.model" in err


def test_pipeline_retrieve_one_per_file_rerank_order(sample_workspace, model_dir, monkeypatch):
    from codeask.query.steps import rerank
    from codeask.workspace import Workspace

    monkeypatch.setattr(rerank, "TOP_K", 2)
    ws = Workspace(
        [sample_workspace],
        flags={"rerank.enabled": True, "rerank.model": str(model_dir), "retrieval.top_k": 1},
    )
    ws.index(embed=False)
    pipeline = ws.build_pipeline(llm=None)
    names = ["neighbours", "one_per_file", "rerank", "widen"]
    assert [s.name for s in pipeline.response_transformers] == names
    q = pipeline.run(Query("cart total price shipping cost coupon discount"))
    steps = [e.step for e in q.history]
    assert steps == ["parse_question", "embed", "retrieve", *names, "answer"]
    retrieved = q.history[2].documents
    # retrieval fetched at least 2 * rerank.TOP_K chunks although retrieval.top_k is 1
    assert len(retrieved) >= 3
    assert q.retrieved_documents == retrieved
    # one_per_file kept at least rerank.TOP_K files
    assert len(q.history[steps.index("one_per_file")].documents) >= 2
    # rerank: shipping.py (contains "express") first, top_k = 2 kept, scores descending
    reranked = q.history[steps.index("rerank")].documents
    assert reranked[0].path == "src/shop/shipping.py"
    assert len(reranked) == 2
    assert reranked[0].score >= reranked[1].score
    # widening after rerank keeps the reranked files, in their order, each leading with its reranked span
    # the reranked files lead; widen adds spans to them, no file
    assert list(dict.fromkeys(d.key() for d in q.documents))[: len(reranked)] == [d.key() for d in reranked]
    # the retrieve event still holds the documents as retrieved, in fused order
    assert [d.score for d in retrieved] == sorted((d.score for d in retrieved), reverse=True)


def test_the_rerankers_minimum_is_set_when_the_pipeline_is_built_and_the_options_stay_as_asked(
    sample_workspace, model_dir, monkeypatch
):
    import dataclasses

    from codeask.query.steps import rerank
    from codeask.workspace import Workspace

    monkeypatch.setattr(rerank, "TOP_K", 2)
    ws = Workspace([sample_workspace], flags={"rerank.enabled": True, "rerank.model": str(model_dir)})
    ws.index(embed=False)
    pipeline = ws.build_pipeline(llm=None)
    # settled once, when built: retrieve >= 2 * TOP_K chunks, one_per_file >= TOP_K files
    assert pipeline.retriever.min_top_k == 4
    assert pipeline.response_transformers[1].name == "one_per_file"
    assert pipeline.response_transformers[1].min_files == 2
    options = RetrievalOptions(top_k=1, max_files=1)
    q = pipeline.run(Query("cart total price shipping cost coupon discount", options=options))
    assert q.options is options and options == RetrievalOptions(top_k=1, max_files=1)  # never changed mid-run
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.top_k = 5
    steps = [e.step for e in q.history]
    retrieved = q.history[steps.index("retrieve")].documents
    assert len(retrieved) >= 3  # the reranker's minimum, although the question asked for top_k 1
    assert len(q.history[steps.index("one_per_file")].documents) == 2  # TOP_K files to choose from
    assert len(q.history[steps.index("rerank")].documents) == 1  # the question's max_files caps what is kept
