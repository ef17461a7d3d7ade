"""Tests for codeask.index.chunking (line-range chunking of workspace files)."""

from __future__ import annotations

import dataclasses
import hashlib
import pathlib
import threading

import pytest

from codeask.index.chunking import Chunk, chunk_text, language_for


def editor_lines(text: str) -> list[str]:
    """Lines as editors, git and the LSP count them: ended by \\n, \\r\\n or \\r only."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines



def assert_covers(chunks: list[Chunk], text: str) -> None:
    """Chunks tile lines 1..N exactly and reproduce them."""
    lines = editor_lines(text)
    if not text.strip():  # empty or whitespace only: no chunk at all
        assert chunks == []
        return
    expected_start = 1
    for c in chunks:
        assert c.start_line == expected_start, (c.path, c.start_line, expected_start)
        assert c.end_line >= c.start_line
        assert c.content == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert c.content_hash == hashlib.sha256(c.content.encode()).hexdigest()
        expected_start = c.end_line + 1
    assert expected_start == len(lines) + 1


def spans(chunks: list[Chunk]) -> list[tuple[int, int, str]]:
    return [(c.start_line, c.end_line, c.symbol) for c in chunks]


def load(tmp_path: pathlib.Path, name: str, text: str) -> tuple[str, str]:
    """Write a sample into tmp_path and read it back like the indexer does."""
    p = tmp_path / name
    p.write_bytes(text.encode())
    return name, p.read_bytes().decode()


PY_SAMPLE = '''\
"""Module doc."""
import os
import sys

MAX = 10
NAME = "x"


# helper comment
@decorator
def helper(a, b):
    """Doc."""
    return a + b


class Session(Base):
    """A session."""

    timeout = 5

    def __init__(self):
        self.x = 1
        self.y = 2

    def resolve_redirects(self, resp):
        # follow
        while resp:
            resp = resp.next
        return resp

    @property
    def name(self):
        return "s"


def main():
    print(helper(1, 2))
'''

SAMPLES = {
    "S.java": """\
package a;

public class Greeter {
    private int n;

    public Greeter(int n) {
        this.n = n;
    }

    @Override
    public String toString() {
        return "g";
    }
}
""",
    "s.c": """\
#include <stdio.h>

struct point {
    int x;
};

int add(int a, int b) {
    return a + b;
}

int main(void) {
    return add(1, 2);
}
""",
    "s.cpp": """\
#include <vector>

namespace geo {
class Shape {
 public:
  int area() const {
    return 0;
  }
};
}

int geo::Shape::area2() {
  return 1;
}
""",
    "s.cs": """\
using System;

namespace App {
    public class Calc {
        public int Add(int a, int b) {
            return a + b;
        }
        public int Sub(int a, int b) {
            return a - b;
        }
    }
}
""",
    "s.go": """\
package main

import "fmt"

// S is a thing.
type S struct {
	a int
}

func (s *S) Foo() int {
	return s.a
}

func main() {
	fmt.Println(1)
}
""",
    "s.js": """\
import x from "y";

/** Adds. */
export function add(a, b) {
  return a + b;
}

export class Box {
  constructor(v) {
    this.v = v;
  }
  get() {
    return this.v;
  }
}

const mul = (a, b) => {
  return a * b;
};
""",
    "s.kt": """\
class A {
  fun f(): Int {
    return 1
  }
}

fun g() {
  println("x")
}
""",
    "s.lua": """\
local M = {}

function M.foo(a)
  return a
end

local function bar()
  return 2
end
""",
    "s.php": """\
<?php
namespace App;

class User {
    public function name() {
        return "n";
    }
    public function age() {
        return 3;
    }
}

function helper() {
    return 1;
}
""",
    "s.rb": """\
require "json"

module Shop
  class Cart
    def initialize
      @items = []
    end

    def add(item)
      @items << item
    end
  end
end
""",
    "s.rs": """\
use std::fmt;

#[derive(Debug)]
struct Point {
    x: i32,
}

impl Point {
    fn new() -> Self {
        Point { x: 0 }
    }
    fn x(&self) -> i32 {
        self.x
    }
}
""",
    "s.sh": """\
#!/bin/bash
set -e

build() {
  make all
}

clean() {
  rm -rf out
}
""",
    "s.ts": """\
interface Props {
  a: number;
}

export class Store {
  private x = 1;
  load(): number {
    return this.x;
  }
}

type Id = string;
""",
    "s.tsx": """\
import React from "react";

export function App(props: { n: number }) {
  return <div>{props.n}</div>;
}

export const Btn = () => {
  return <button />;
};
""",
}

# (start, end, symbol) of each sample with chunk_lines=4
EXPECTED = {
    "S.java": [(1, 2, ""), (3, 5, "Greeter"), (6, 9, "Greeter.Greeter"), (10, 14, "Greeter.toString")],
    "s.c": [(1, 2, ""), (3, 6, "point"), (7, 10, "add"), (11, 13, "main")],
    "s.cpp": [(1, 2, ""), (3, 5, "geo.Shape"), (6, 10, "geo.Shape.area"), (11, 14, "geo.Shape.area2")],
    "s.cs": [(1, 2, ""), (3, 3, "App"), (4, 7, "App.Calc"), (8, 12, "App.Calc.Sub")],
    "s.go": [(1, 4, ""), (5, 9, "S"), (10, 13, "S.Foo"), (14, 16, "main")],
    "s.js": [(1, 2, ""), (3, 7, "add"), (8, 11, "Box"), (12, 16, "Box.get"), (17, 19, "mul")],
    "s.kt": [(1, 5, "A"), (6, 9, "g")],
    "s.lua": [(1, 2, ""), (3, 6, "M.foo"), (7, 9, "bar")],
    "s.php": [(1, 3, "App"), (4, 7, "User"), (8, 12, "User.age"), (13, 15, "helper")],
    "s.rb": [(1, 2, ""), (3, 3, "Shop"), (4, 8, "Shop.Cart"), (9, 13, "Shop.Cart.add")],
    "s.rs": [(1, 2, ""), (3, 7, "Point"), (8, 11, "Point"), (12, 15, "Point.x")],
    "s.sh": [(1, 3, ""), (4, 7, "build"), (8, 10, "clean")],
    "s.ts": [(1, 4, "Props"), (5, 6, "Store"), (7, 11, "Store.load"), (12, 12, "Id")],
    "s.tsx": [(1, 2, ""), (3, 6, "App"), (7, 9, "Btn")],
}
LANGUAGES = {
    "S.java": "java", "s.c": "c", "s.cpp": "cpp", "s.cs": "c_sharp", "s.go": "go",
    "s.js": "javascript", "s.kt": "kotlin", "s.lua": "lua", "s.php": "php", "s.rb": "ruby",
    "s.rs": "rust", "s.sh": "bash", "s.ts": "typescript", "s.tsx": "tsx",
}


# ---------------------------------------------------------------- python


def test_python_small_file_is_one_chunk(tmp_path):
    name, text = load(tmp_path, "mod.py", PY_SAMPLE)
    chunks = chunk_text(name, text)
    assert spans(chunks) == [(1, 37, "")]  # 3 top-level definitions -> scope symbol
    assert chunks[0].language == "python"
    assert chunks[0].path == "mod.py"
    assert_covers(chunks, text)


def test_python_exact_ranges_and_symbols(tmp_path):
    name, text = load(tmp_path, "mod.py", PY_SAMPLE)
    chunks = chunk_text(name, text, chunk_lines=8)
    assert spans(chunks) == [
        (1, 8, ""),  # docstring, imports, constants, trailing blank lines
        (9, 15, "helper"),  # comment + decorator belong to the function
        # class too big: split at its methods; header + docstring + attribute
        # + __init__ fit in 8 lines -> two claims -> the class symbol
        (16, 24, "Session"),
        (25, 30, "Session.resolve_redirects"),
        (31, 35, "Session.name"),  # @property with its method
        (36, 37, "main"),
    ]
    assert chunks[1].content.startswith("# helper comment\n@decorator\ndef helper")
    assert_covers(chunks, text)


def test_python_single_definition_takes_its_symbol(tmp_path):
    text = "import os\n\n\ndef only():\n    return os.sep\n"
    assert spans(chunk_text("a.py", text)) == [(1, 5, "only")]


def test_long_function_is_windowed_keeping_symbol(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(400))
    text = "import os\n\n\ndef big():\n" + body + "\n    return x0\n\n\ndef small():\n    return 1\n"
    name, text = load(tmp_path, "big.py", text)
    chunks = chunk_text(name, text)
    assert spans(chunks) == [
        (1, 3, ""),
        (4, 63, "big"),
        (64, 123, "big"),
        (124, 183, "big"),
        (184, 243, "big"),
        (244, 303, "big"),
        (304, 363, "big"),
        (364, 407, "big"),
        (408, 409, "small"),
    ]
    assert_covers(chunks, text)


def test_a_class_header_joins_the_docstring_that_fills_a_chunk():
    """A class whose docstring alone fills a chunk (flask's ``class Flask(App):``, its docstring
    windowed) keeps its header line in the docstring's chunk, within the packer's slack, so a
    citation of the class begins at ``class``; a function's long body is windowed as before."""
    doc = "".join(f"    line {i} of the docstring\n" for i in range(60))
    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(30))
    text = 'import os\n\n\nclass Flask(App):\n    """\n' + doc + '    """\n\n' + methods
    chunks = chunk_text("app.py", text)
    assert_covers(chunks, text)
    head = next(c for c in chunks if c.symbol == "Flask")
    assert head.content.startswith("class Flask(App):\n")
    assert head.end_line - head.start_line + 1 > 1
    assert all(c.end_line - c.start_line + 1 <= 63 for c in chunks)


def numbered(line: str, n: int) -> str:
    """``line`` (a ``str.format`` template of ``{i}``) for i in 0..n-1, joined."""
    return "".join(line.format(i=i) for i in range(n))


def test_a_long_signature_starts_the_windows_of_its_docstring():
    """A function whose signature (8 lines) and docstring (58) do not fit one chunk is cited from its
    ``def``: the docstring's windows start at the signature (flask's ``Flask.run`` was 546-553, its
    signature alone, then 554-610 from the docstring); a docstring-less long body still splits at its
    statements, after its own header chunk."""
    doc = '    """\n' + numbered("    line {i} of the docstring\n", 56) + '    """\n'
    text = "import os\n\n\ndef run(\n" + numbered("    p{i}: int = {i},\n", 6) + ") -> None:\n" + doc
    text += numbered("    x{i} = p0 + {i}\n", 20)
    chunks = chunk_text("app.py", text)
    assert_covers(chunks, text)
    first = next(c for c in chunks if c.symbol == "run")
    assert first.start_line == 4 and first.content.startswith("def run(") and '"""' in first.content
    assert all(c.end_line - c.start_line + 1 <= 63 for c in chunks)


def test_a_window_of_a_long_decorated_function_begins_at_its_def():
    """Decorators and a signature too long for one chunk are cut at the ``def`` line, so one window
    holds the whole signature with the body after it (flask's ``run_command``: 53 lines of click
    options, then a 10-line signature, was cut at its 7th parameter and the window citing its body
    opened mid-signature); the decorators are the windows before it."""
    options = numbered('@click.option("--opt{i}", default={i}, help="Option {i}.")\n', 52)
    text = '@click.command("run")\n' + options + "def run(\n" + numbered("    opt{i}: int,\n", 9) + ") -> None:\n"
    text += numbered("    x{i} = opt0 + {i}\n", 30)
    chunks = chunk_text("cli.py", text)
    assert_covers(chunks, text)
    at_def = next(c for c in chunks if c.start_line == 54)
    assert at_def.symbol == "run" and at_def.content.startswith("def run(\n") and ") -> None:" in at_def.content
    assert [c.end_line for c in chunks if c.start_line < 54] == [53]


def test_nested_class_inside_large_class(tmp_path):
    methods = "".join(f"        def m{i}(self):\n            return {i}\n\n" for i in range(6))
    text = "class Outer:\n    x = 1\n\n    class Inner:\n" + methods + "    def tail(self):\n        pass\n"
    chunks = chunk_text("n.py", text, chunk_lines=6)
    assert_covers(chunks, text)
    symbols = {c.symbol for c in chunks}
    assert "Outer" in symbols
    assert "Outer.Inner" in symbols or any(s.startswith("Outer.Inner.m") for s in symbols)
    assert "Outer.tail" in symbols
    assert all(c.end_line - c.start_line + 1 <= 7 for c in chunks)


# ---------------------------------------------------------------- other languages


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_language_samples(tmp_path, name):
    name, text = load(tmp_path, name, SAMPLES[name])
    chunks = chunk_text(name, text, chunk_lines=4)
    assert_covers(chunks, text)
    assert spans(chunks) == EXPECTED[name]
    assert {c.language for c in chunks} == {LANGUAGES[name]}


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("chunk_lines", [1, 2, 3, 7, 60])
def test_language_samples_cover_all_sizes(name, chunk_lines):
    text = SAMPLES[name]
    chunks = chunk_text(name, text, chunk_lines=chunk_lines, max_chunk_chars=80)
    assert_covers(chunks, text)
    for c in chunks:
        assert len(c.content) <= 80 or c.start_line == c.end_line


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_tiny_file_is_one_chunk(name):
    chunks = chunk_text(name, SAMPLES[name])
    assert len(chunks) == 1
    assert (chunks[0].start_line, chunks[0].end_line) == (1, len(SAMPLES[name].splitlines()))


# ---------------------------------------------------------------- docs


MD = """\
Intro text.

# Guide

Welcome.

## Install

Run pip.

```
# not a heading
```

## Usage

Call it.

Appendix
========

Setext body.
"""

RST = """\
=====
Title
=====

Intro para.

Section A
---------

Text a.

Sub A1
~~~~~~

Text a1.

Section B
---------

Text b.
"""


def test_markdown_headings(tmp_path):
    name, text = load(tmp_path, "README.md", MD)
    chunks = chunk_text(name, text, chunk_lines=4)
    assert spans(chunks) == [
        (1, 2, ""),
        (3, 6, "Guide"),
        (7, 10, "Guide > Install"),
        (11, 14, "Guide > Install"),  # fenced "# not a heading" is not a heading
        (15, 18, "Guide > Usage"),
        (19, 22, "Appendix"),  # setext heading
    ]
    assert chunks[0].language == "markdown"
    assert_covers(chunks, text)


def test_markdown_small_sections_grouped_under_parent():
    text = "# Top\n\n## A\n\na\n\n## B\n\nb\n"
    assert spans(chunk_text("x.md", text)) == [(1, 9, "Top")]


def test_rst_titles(tmp_path):
    name, text = load(tmp_path, "doc.rst", RST)
    chunks = chunk_text(name, text, chunk_lines=4)
    assert spans(chunks) == [
        (1, 4, "Title"),
        (5, 6, "Title"),
        (7, 10, "Title > Section A"),
        (11, 11, "Title > Section A"),
        (12, 15, "Title > Section A > Sub A1"),
        (16, 16, "Title > Section A > Sub A1"),
        (17, 20, "Title > Section B"),
    ]
    assert chunks[0].language == "rst"
    assert_covers(chunks, text)


def test_large_markdown_section_windowed():
    text = "# Big\n" + "\n".join(f"line {i}" for i in range(25)) + "\n"
    chunks = chunk_text("big.md", text, chunk_lines=10)
    assert spans(chunks) == [(1, 10, "Big"), (11, 20, "Big"), (21, 26, "Big")]


# ---------------------------------------------------------------- fallbacks and edge cases


def test_unknown_extension_windows(tmp_path):
    text = "\n".join(f"row {i}" for i in range(1, 26)) + "\n"
    name, text = load(tmp_path, "data.weird", text)
    chunks = chunk_text(name, text, chunk_lines=10)
    assert spans(chunks) == [(1, 10, ""), (11, 20, ""), (21, 25, "")]
    assert chunks[0].language == "text"
    assert chunks[1].content.splitlines()[0] == "row 11"
    assert_covers(chunks, text)


def test_max_chunk_chars_and_overlong_line():
    text = "a\n" + "x" * 5000 + "\nb\nc\n"
    chunks = chunk_text("f.txt", text, max_chunk_chars=100)
    assert [(c.start_line, c.end_line, len(c.content)) for c in chunks] == [
        (1, 1, 1), (2, 2, 5000), (3, 4, 3)
    ]
    code = "def f():\n    s = '" + "y" * 5000 + "'\n    return s\n"
    chunks = chunk_text("f.py", code, max_chunk_chars=100)
    assert_covers(chunks, code)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 1), (2, 2), (3, 3)]
    assert {c.symbol for c in chunks} == {"f"}


def test_char_limit_splits_lines():
    text = "\n".join("z" * 30 for _ in range(10))
    chunks = chunk_text("z.txt", text, max_chunk_chars=100)
    assert all(len(c.content) <= 100 for c in chunks)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (4, 6), (7, 9), (10, 10)]


def test_crlf_lines(tmp_path):
    text = "import os\r\n\r\ndef f():\r\n    return 1\r\n\r\ndef g():\r\n    return 2\r\n"
    p = tmp_path / "c.py"
    p.write_bytes(text.encode())
    text = p.read_bytes().decode()  # keep the \r\n
    chunks = chunk_text("c.py", text, chunk_lines=3)
    assert spans(chunks) == [(1, 2, ""), (3, 5, "f"), (6, 7, "g")]
    assert chunks[1].content == "def f():\n    return 1\n"
    assert all("\r" not in c.content for c in chunks)
    assert_covers(chunks, text)


def test_other_line_separators_keep_numbering():
    text = "def f():\n    x = 1\x0c\n    return x\u2028y = 2\n"
    chunks = chunk_text("s.py", text, chunk_lines=2)
    assert_covers(chunks, text)
    # Editors, git and the LSP count lines at \n, \r\n and \r only: \x0c and \u2028 stay inside
    # their lines (str.splitlines() would make 5 lines of these 3)
    assert chunks[-1].end_line == 3 and chunks[-1].content.endswith("    return x\u2028y = 2")


@pytest.mark.parametrize("sep", ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_only_newlines_end_lines(sep):
    """Issue 18.2: a form feed line (or VT, NEL, U+2028, ...) shifts no later line and changes no text."""
    text = f"def a():\n    return 1\n{sep}\ndef target_fn():\n    return 2\n    # para{sep}graph\n"
    chunks = chunk_text("f.py", text, chunk_lines=60)
    assert_covers(chunks, text)
    assert chunks[-1].end_line == 6  # six lines, as `grep -c ''` and every editor count them
    target = next(c for c in chunk_text("f.py", text, chunk_lines=2) if "target_fn" in c.content)
    assert (target.start_line, target.symbol) == (4, "target_fn")
    assert "\n".join(c.content for c in chunks) == text[:-1]  # stored text unchanged
    assert f"# para{sep}graph" in chunks[-1].content


def test_syntax_error_still_covers(tmp_path):
    text = "def ok():\n    return 1\n\ndef broken(:\n    x = \n\nclass C:\n    pass\n"
    name, text = load(tmp_path, "bad.py", text)
    chunks = chunk_text(name, text, chunk_lines=3)
    assert_covers(chunks, text)
    assert spans(chunks) == [(1, 3, "ok"), (4, 6, ""), (7, 8, "C")]
    garbage = "}{ ))) class ( def\n" * 50
    assert_covers(chunk_text("g.js", garbage, chunk_lines=7), garbage)


def test_empty_and_tiny():
    assert chunk_text("e.py", "") == []
    c = chunk_text("x.py", "x = 1")
    assert spans(c) == [(1, 1, "")] and c[0].content == "x = 1"
    assert spans(chunk_text("x.py", "\n\nx = 1\n\n")) == [(1, 4, "")]  # blank lines around code stay covered


@pytest.mark.parametrize("name", ["e.py", "blank.md", "doc.rst", "notes.txt", "x.js", "Makefile"])
@pytest.mark.parametrize("text", ["\n", "\n\n\n", "   \n\t\n", "\r\n\r\n", " \x0c\n\u2028\n", "    "])
def test_whitespace_only_file_has_no_chunks(name, text):
    """A file holding only whitespace makes no chunk (an empty row search could return), in every language."""
    assert chunk_text(name, text) == []
    assert chunk_text(name, text, chunk_lines=1) == []


@pytest.mark.parametrize(
    "path, lang",
    [
        ("a/b/c.py", "python"), ("x.pyi", "python"), ("x.js", "javascript"), ("x.mjs", "javascript"),
        ("x.ts", "typescript"), ("x.tsx", "tsx"), ("x.go", "go"), ("x.rs", "rust"),
        ("X.java", "java"), ("x.c", "c"), ("x.h", "c"), ("x.cc", "cpp"), ("x.hpp", "cpp"),
        ("x.cs", "c_sharp"), ("x.rb", "ruby"), ("x.php", "php"), ("x.kt", "kotlin"),
        ("x.scala", "scala"), ("x.swift", "swift"), ("x.lua", "lua"), ("x.sh", "bash"),
        ("README.md", "markdown"), ("doc.rst", "rst"), ("notes.txt", "text"),
        ("Makefile", "make"), ("sub/Dockerfile", "dockerfile"), ("Dockerfile.dev", "dockerfile"),
        ("Gemfile", "ruby"), ("CMakeLists.txt", "cmake"), ("X.PY", "python"),
        ("noext", "text"), ("weird.zzz", "text"), ("conf.yaml", "yaml"), ("p.toml", "toml"),
    ],
)
def test_language_for(path, lang):
    assert language_for(path) == lang


def test_chunk_is_frozen():
    c = chunk_text("a.py", "x = 1\n")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.symbol = "y"  # type: ignore[misc]


def test_thread_safety():
    text = PY_SAMPLE * 5
    expected = spans(chunk_text("t.py", text, chunk_lines=8))
    results: list = []
    errors: list = []

    def work():
        try:
            for _ in range(20):
                results.append(spans(chunk_text("t.py", text, chunk_lines=8)))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 160 and all(r == expected for r in results)


# ---------------------------------------------------------------- real code


def _real_files(root: pathlib.Path, *patterns: str) -> list[pathlib.Path]:
    files = sorted({p for pattern in patterns for p in root.glob(pattern) if p.is_file()})
    assert files, f"no {patterns} under {root}"
    return files


def _assert_chunks_cover(root: pathlib.Path, files: list[pathlib.Path], chunk_lines_options=(60,)) -> None:
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        for chunk_lines in chunk_lines_options:
            chunks = chunk_text(p.relative_to(root).as_posix(), text, chunk_lines=chunk_lines)
            assert_covers(chunks, text)
            for c in chunks:
                assert len(c.content) <= 3000 or c.start_line == c.end_line
                assert c.end_line - c.start_line + 1 <= chunk_lines + 3


@pytest.mark.slow
def test_requests_sdist_coverage(requests_sdist):
    files = _real_files(requests_sdist, "**/*.py", "**/*.md", "**/*.rst")
    assert len(files) > 30
    _assert_chunks_cover(requests_sdist, files, (60, 13))


@pytest.mark.slow
def test_requests_sessions_symbols(requests_sdist):
    path = requests_sdist / "src/requests/sessions.py"
    chunks = chunk_text("src/requests/sessions.py", path.read_text())
    symbols = {c.symbol for c in chunks}
    assert {"SessionRedirectMixin.resolve_redirects", "Session.request", "Session.send"} <= symbols
    assert len(chunks) > 10


@pytest.mark.slow
def test_every_sphinx_file_is_covered_exactly_once():
    from tests.conftest import fetch_sdist

    root = fetch_sdist("sphinx==9.0.4")
    files = _real_files(root, "**/*.py", "**/*.rst", "**/*.js", "**/*.html")
    assert len(files) > 500
    _assert_chunks_cover(root, files)


def test_huge_docstring_with_escapes_respects_limits():
    doc = "\n".join(f'    line {i} with an escaped \\" quote' if i % 50 == 0 else f"    line {i}"
                    for i in range(200))
    text = 'class K:\n    """\n' + doc + '\n    """\n\n    def m(self):\n        return 1\n'
    chunks = chunk_text("k.py", text, chunk_lines=60, max_chunk_chars=1000)
    assert_covers(chunks, text)
    assert all(len(c.content) <= 1000 for c in chunks)
    assert all(c.end_line - c.start_line + 1 <= 63 for c in chunks)
    assert chunks[0].symbol == "K" and chunks[-1].symbol.startswith("K")
