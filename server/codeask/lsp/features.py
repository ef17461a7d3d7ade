"""The language server's lifecycle and workspace handlers: ``initialize`` / ``initialized`` /
``shutdown`` / ``exit``, settings, workspace folders, opened and saved documents, watched files.

Each is a few lines over :class:`~codeask.lsp.session.CodeaskServer`; blocking work (reading
manifests, adding roots) runs in its ``reads`` lane, never on the event loop.
:data:`FEATURES` lists them; :func:`codeask.lsp.server.make_server` registers them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from pathlib import Path

from lsprotocol import types as lsp

from codeask.imports import start_preload
from codeask.lsp.commands import code_action
from codeask.lsp.convert import settings_from, uri_to_path
from codeask.lsp.guards import guard
from codeask.lsp.hover import register_hover
from codeask.lsp.session import CodeaskServer
from codeask.lsp.watched import is_watched, watchers_for
from codeask.lsp.work import Lane
from codeask.projects import project_root_of

__all__ = ["FEATURES"]

log = logging.getLogger("codeask.lsp")


@guard
def initialize(ls: CodeaskServer, params: lsp.InitializeParams):
    """``initialize``: open the workspace of the folders (no index is opened and nothing heavy is
    imported here); offer hover when enabled (:func:`~codeask.lsp.hover.register_hover`)."""
    ls.loop = asyncio.get_running_loop()
    start_preload()  # heavy imports in one thread, before any worker needs them
    ls.open_workspace(initial_roots(ls, params), settings_from(params.initialization_options))
    register_hover(ls)


def initial_roots(ls: CodeaskServer, params: lsp.InitializeParams) -> list[str]:
    """The folders to serve: the workspace folders, else ``rootUri`` / ``rootPath``, else (over TCP,
    no folder named) the folders the server was started for."""
    uris = [f.uri for f in params.workspace_folders or []]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    roots = [p for u in uris if (p := uri_to_path(u)) and Path(p).is_dir()]
    if not uris and params.root_path and Path(params.root_path).is_dir():
        roots = [params.root_path]
    if not uris and not params.root_path and ls.gate is not None:
        roots = [str(f) for f in ls.gate.folders]
    return roots


@guard
async def initialized(ls: CodeaskServer, params: lsp.InitializedParams):
    """``initialized``: pull settings, choose the change source, index if configured."""
    await reload_settings(ls)
    if ls.caps("workspace", "did_change_watched_files", "dynamic_registration"):
        options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers_for())
        reg = lsp.Registration(
            id="codeask-watch", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
        )
        try:
            await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[reg]))
            ls.client_watches = True
        except Exception as exc:  # then watchfiles is the change source
            log.warning("registering file watchers failed: %s", exc)
    await ls.reads.run(ls.start_indexing_if_configured)


async def reload_settings(ls: CodeaskServer, pushed=None) -> None:
    """:meth:`CodeaskServer.pull_settings`; a failure is shown, not raised."""
    try:
        await ls.pull_settings(pushed)
    except Exception as exc:
        ls.show(f"codeask: settings: {exc}")


@guard
async def did_change_configuration(ls: CodeaskServer, params: lsp.DidChangeConfigurationParams):
    """``workspace/didChangeConfiguration``: reload the settings."""
    await reload_settings(ls, params.settings)


@guard
async def did_change_folders(ls: CodeaskServer, params: lsp.DidChangeWorkspaceFoldersParams):
    """``workspace/didChangeWorkspaceFolders``: remove and add roots, then index (if the workspace
    was indexed already); a folder outside those served over TCP is refused with a message."""
    for folder in params.event.removed:
        if path := uri_to_path(folder.uri):
            await ls.reads.run(functools.partial(ls.service.remove_root, path))
    for folder in params.event.added:
        if (path := uri_to_path(folder.uri)) and not ls.serves(path):
            ls.show(f"codeask: {path} is outside the folders this server serves: not added")
        elif path and Path(path).is_dir():
            await ls.reads.run(functools.partial(ls.service.add_root, path))
    if ls.started:
        ls.index_soon()


@guard
async def did_open(ls: CodeaskServer, params: lsp.DidOpenTextDocumentParams):
    """``textDocument/didOpen``: with no workspace folder (``rootUri`` null, single-file mode), serve
    the opened file's project, or say once that no folder is open."""
    if not ls.ready or ls.service.roots or not (path := uri_to_path(params.text_document.uri)):
        return
    root = await ls.reads.run(lambda: project_root_of(path))
    if root is None:
        ls.say_no_folder(path)
    elif ls.serves(root):  # over TCP, only inside the served folders
        await ls.reads.run(lambda: ls.service.add_root(root))
        ls.show(
            f"codeask: no workspace folder is open: indexing {root}, the project of {Path(path).name}",
            lsp.MessageType.Info,
        )
        ls.index_soon()


@guard
async def did_save(ls: CodeaskServer, params: lsp.DidSaveTextDocumentParams):
    """``textDocument/didSave``: only for a file no change source covers (the client watches known
    file types; ``watchfiles`` sees everything), so no change is read twice."""
    path = uri_to_path(params.text_document.uri)
    if path and ls.client_watches and not is_watched(path) and ls.service.is_relevant(os.path.abspath(path)):
        await ls.changed([path])


@guard
async def did_change_watched(ls: CodeaskServer, params: lsp.DidChangeWatchedFilesParams):
    """``workspace/didChangeWatchedFiles`` (the change source when the client watches): changes to
    ignored or non-indexed paths are dropped before any file is read."""
    paths = {p for c in params.changes if (p := uri_to_path(c.uri)) and ls.service.is_relevant(os.path.abspath(p))}
    if paths:
        await ls.changed(sorted(paths))


@guard
async def shutdown(ls: CodeaskServer, params: None):
    """``shutdown``: cancel requests, stop the watcher and the index thread in order."""
    ls.shutdown_received = True
    await Lane("stop", 1, imports=False).run(ls.stop_all)


def exit_(ls: CodeaskServer, params: None):
    """``exit``: stop taking work (pygls then ends the loop)."""
    ls.stopping.set()


#: ``(method, handler, options)`` of every LSP feature but hover (:func:`~codeask.lsp.hover.register_hover`).
FEATURES = [
    (lsp.INITIALIZE, initialize, None),
    (lsp.INITIALIZED, initialized, None),
    (lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration, None),
    (lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, did_change_folders, None),
    (lsp.TEXT_DOCUMENT_DID_OPEN, did_open, None),
    (lsp.TEXT_DOCUMENT_DID_SAVE, did_save, None),
    (lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, did_change_watched, None),
    (lsp.SHUTDOWN, shutdown, None),
    (lsp.EXIT, exit_, None),
    (
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        code_action,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.Refactor]),
    ),
]
