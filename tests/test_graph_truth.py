"""The symbol graph tells the truth at the front doors (a newcomer's findings on chi, fd and
requests): a Go field of another package's type (value, pointer, slice or map) ends the chain, a
method value passed as an argument is a use, a Rust module path never reaches a method, two
definitions of one name each have their own callers and callees, a definition has one line range
everywhere, a bare call means the definition in scope, and a name-only link says it is one. Real
parts: tree-sitter parsing, LanceDB in a temp dir, the CLI as a subprocess."""

from __future__ import annotations

from codeask.query.resolve import NAME_ONLY, SURE, TYPED
from codeask.workspace import Workspace
from tests.workspaces import related_json, write_tree

WALK = (
    "pub struct WorkerState {\n    n: u32,\n}\n\nimpl WorkerState {\n"
    "    pub fn new(n: u32) -> WorkerState {\n        WorkerState { n }\n    }\n\n"
    "    fn spawn_senders(&self) -> u32 {\n        let mut x = self.n;\n"
    + "        x += 1;\n" * 150
    + "        x\n    }\n\n"
    "    fn scan(&self) -> u32 {\n        self.spawn_senders()\n    }\n}\n\n"
    "pub fn scan(n: u32) -> u32 {\n    WorkerState::new(n).scan()\n}\n"
)
FD = {"src/walk.rs": WALK, "src/main.rs": "mod walk;\n\nfn run() -> u32 {\n    walk::scan(1)\n}\n"}


def test_a_rust_module_path_is_a_function_and_each_definition_has_its_own_callers(tmp_path):
    """fd's ``walk::scan(..)`` calls the free function ``scan``, never the method ``WorkerState::scan``,
    whose sure caller is the free ``scan`` (``WorkerState::new(..).scan()``); each caller and callee
    names the definition it links to (``of``), and ``spawn_senders``, split over chunks, has one
    line range as a definition and as a callee."""
    root = write_tree(tmp_path / "fd", FD)
    Workspace([root]).index(embed=False)
    found = related_json(root, "scan")
    at = {d["symbol"]: f"{d['path']}:{d['start_line']}" for d in found["definitions"]}
    assert set(at) == {"WorkerState.scan", "scan"}
    callers = {(x["path"], x["symbol"], x["sure"], x["of"]) for x in found["callers"]}
    assert callers == {("src/main.rs", "run", SURE, at["scan"]), ("src/walk.rs", "scan", SURE, at["WorkerState.scan"])}
    callees = {(x["symbol"], x["of"]): (x["start_line"], x["end_line"]) for x in found["callees"]}
    spawn = related_json(root, "spawn_senders")["definitions"][0]
    assert spawn["end_line"] > spawn["start_line"] + 150
    assert callees[("WorkerState.spawn_senders", at["WorkerState.scan"])] == (spawn["start_line"], spawn["end_line"])
    assert ("WorkerState.spawn_senders", at["scan"]) not in callees
