"""What the service reports: one :data:`IndexReadiness` every front door shows the same way, in a :class:`ServiceStatus`.

``codeask status``, MCP ``index_status``, the watch socket and the LSP ``codeask.status`` report
:meth:`codeask.service.Service.status`; :func:`readiness` derives the state from what the
scheduler does (:class:`~codeask.scheduler.IndexPhase`) and the indexes' counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeask.index.records import IndexReadiness, WorkspaceStatus
from codeask.scheduler import IndexActivity, IndexPhase, IndexScheduler
from codeask.workspace import Workspace

__all__ = ["OUTDATED_NOTE", "ServiceStatus", "Refresh", "readiness", "service_status", "keyword_note"]


@dataclass(frozen=True)
class ServiceStatus:
    """What the service holds and does now: ``codeask status``, MCP ``index_status``, the watch
    socket and the LSP ``codeask.status`` all report it.

    Attributes:
        state: the readiness (:data:`IndexReadiness`): ``not-indexed`` (no root has an index and nothing
            builds one), ``building`` (some root's first keyword index is not finished),
            ``keyword-only`` (chunks still wait for vectors), ``ready``, ``read-only`` (an index
            cannot be written, or this service reads one another process writes) or
            ``locked-elsewhere`` (another process holds a root's write lock; indexing waits for it).
        note: why the state is not ``ready``, in one line (``None`` when there is nothing to say).
        indexing: a background run is wanted or under way.
        activity, message, done, total: what the scheduler does (:class:`~codeask.scheduler.IndexPhase`).
        lock_holder: the process holding a root's write lock while indexing waits for it.
        counts: the indexes' counts (:class:`~codeask.index.records.WorkspaceStatus`: the JSON of
            ``codeask status --json``).
    """

    state: IndexReadiness
    counts: WorkspaceStatus
    note: str | None = None
    indexing: bool = False
    activity: IndexActivity = "idle"
    message: str = ""
    done: int = 0
    total: int = 0
    lock_holder: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The counts (``{"indexed", "read_only", "files", "files_by_encoding", "chunks_total",
        "vectors_pending", "index_dir", "embedding_model", "llm", "roots"}``) plus ``"state"`` and
        ``"note"``."""
        return {**self.counts, "state": self.state, "note": self.note}


@dataclass(frozen=True)
class Refresh:
    """How :meth:`Service.refresh` left the first root's index: ``outcome`` ``updated``,
    ``skipped`` (no update asked for), ``read-only`` (it cannot be written: answered as it is) or
    ``locked`` (another process writes it: answered as it is); ``message`` says so in one line
    (``""`` when updated or skipped)."""

    outcome: str
    message: str = ""


def readiness(
    phase: IndexPhase, counts: WorkspaceStatus, *, indexing: bool, building: bool
) -> tuple[IndexReadiness, str | None]:
    """The :data:`IndexReadiness` and its note (``None`` when there is nothing to say) from what the
    scheduler does (``phase``), the indexes' ``counts``, whether a background run is wanted or under
    way (``indexing``) and whether some root's first keyword index is unfinished (``building``).

    A read-only index, then another process's lock, outrank the counts; a failed run keeps the
    state of what is indexed, with the failure as its note; a ready index cut by an older release
    says so (:data:`OUTDATED_NOTE`).
    """
    if phase.activity == "read-only":
        return "read-only", phase.message
    if counts["read_only"]:
        return "read-only", "the index cannot be updated: answers come from it as it is"
    if phase.activity == "waiting":
        return "locked-elsewhere", phase.message
    note = phase.message if phase.activity == "failed" else None
    if not counts["indexed"]:
        return ("building" if indexing else "not-indexed"), note
    if building:
        return "building", note
    if counts["vectors_pending"]:
        return "keyword-only", note or keyword_note(counts["vectors_pending"])
    return "ready", note or (OUTDATED_NOTE if counts["outdated"] else None)


#: The note of a ``ready`` index whose rows an older release cut (:func:`codeask.index.meta.rows_outdated`).
OUTDATED_NOTE = (
    "the index was cut by an older release: answers come from it as it is until the next "
    "'codeask index' reads every file again (vectors of unchanged code are kept)"
)


def keyword_note(pending: int) -> str:
    """The note of a ``keyword-only`` index with ``pending`` chunks waiting for vectors: what it means for
    the results (search matches words only; the symbol graph, written with the chunks, is whole)."""
    return (
        f"{pending} chunks have no vectors yet: search matches their words only (no similar code) until "
        "'codeask index' embeds them; the symbol graph (callers, callees) is complete"
    )


def service_status(workspace: Workspace, scheduler: IndexScheduler) -> ServiceStatus:
    """The :class:`ServiceStatus` of ``workspace`` indexed by ``scheduler`` now (reads counts from
    every index; a root never indexed opens and creates nothing)."""
    counts = workspace.status()
    phase = scheduler.phase
    building = any(not index.searchable() for index in list(workspace.indexes.values()) if index.exists())
    state, note = readiness(phase, counts, indexing=scheduler.indexing, building=building)
    return ServiceStatus(
        state,
        counts,
        note,
        indexing=scheduler.indexing,
        activity=phase.activity,
        message=phase.message,
        done=phase.done,
        total=phase.total,
        lock_holder=scheduler.lock_holder,
    )
