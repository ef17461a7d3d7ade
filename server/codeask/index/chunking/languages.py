"""Language of a workspace file, from its file name or extension.

Also the tables other parts use to decide what is indexable (:data:`KNOWN_EXTENSIONS`,
:data:`KNOWN_FILENAMES`) and which languages get structured (tree-sitter) chunking
(:data:`TREE_SITTER_LANGUAGES`).
"""

from __future__ import annotations

import os

__all__ = ["KNOWN_EXTENSIONS", "KNOWN_FILENAMES", "TREE_SITTER_LANGUAGES", "language_for"]

_EXTENSIONS: dict[str, str] = {
    # python
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    # javascript / typescript
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    # systems
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".inl": "cpp",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".m": "objc",
    ".mm": "objc",
    ".zig": "zig",
    # jvm / .net
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".sc": "scala",
    ".groovy": "groovy",
    ".gradle": "groovy",
    ".cs": "c_sharp",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    # scripting
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    ".phtml": "php",
    ".swift": "swift",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".ksh": "bash",
    ".fish": "fish",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".dart": "dart",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hrl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".mli": "ocaml",
    ".clj": "clojure",
    ".cljs": "clojure",
    ".el": "elisp",
    ".jl": "julia",
    ".nim": "nim",
    ".v": "v",
    ".sol": "solidity",
    ".vim": "vim",
    ".tcl": "tcl",
    # docs
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".mkd": "markdown",
    ".rst": "rst",
    ".rest": "rst",
    ".txt": "text",
    ".tex": "latex",
    ".org": "org",
    ".adoc": "asciidoc",
    # data / config / web
    ".json": "json",
    ".jsonc": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "ini",
    ".properties": "properties",
    ".xml": "xml",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".less": "css",
    ".vue": "vue",
    ".svelte": "svelte",
    ".astro": "astro",
    ".sql": "sql",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".proto": "proto",
    ".tf": "hcl",
    ".hcl": "hcl",
    ".nix": "nix",
    ".cmake": "cmake",
    ".mk": "make",
    ".j2": "jinja",
    ".jinja": "jinja",
    ".jinja2": "jinja",
    ".csv": "csv",
    ".tsv": "tsv",
}

_FILENAMES: dict[str, str] = {
    "makefile": "make",
    "gnumakefile": "make",
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "cmakelists.txt": "cmake",
    "rakefile": "ruby",
    "gemfile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    "brewfile": "ruby",
    "jenkinsfile": "groovy",
    "build": "starlark",
    "build.bazel": "starlark",
    "workspace": "starlark",
    "justfile": "make",
    "sconstruct": "python",
    "sconscript": "python",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".zshrc": "bash",
    ".profile": "bash",
    "go.mod": "gomod",
    "readme": "text",
    "license": "text",
    "copying": "text",
    ".gitignore": "gitignore",
    ".dockerignore": "gitignore",
    ".gitattributes": "gitattributes",
    "requirements.txt": "requirements",
    "pipfile": "toml",
    "cargo.lock": "toml",
}


def language_for(path: str) -> str:
    """Return the language name of ``path`` from its file name or extension.

    Well-known file names (``Makefile``, ``Dockerfile``, ``Gemfile``...) are
    recognised first, then ``Dockerfile.dev``-style prefixes, then the
    extension (case-insensitive).  Unknown files are ``"text"``.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    lower = name.lower()
    if lower in _FILENAMES:
        return _FILENAMES[lower]
    if lower.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    if lower.startswith(("makefile.",)):
        return "make"
    if lower.startswith("requirements") and lower.endswith(".txt"):
        return "requirements"
    _, ext = os.path.splitext(lower)
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    if lower.endswith(".d.ts"):
        return "typescript"
    return "text"


#: Extensions (lowercase, with the dot) and file names (lowercase) with a known language.
KNOWN_EXTENSIONS: frozenset[str] = frozenset(_EXTENSIONS)
KNOWN_FILENAMES: frozenset[str] = frozenset(_FILENAMES)

#: our language name -> tree-sitter-language-pack name, for structured chunking
TREE_SITTER_LANGUAGES: dict[str, str] = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rust": "rust",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "cuda": "cuda",
    "c_sharp": "csharp",
    "ruby": "ruby",
    "php": "php",
    "kotlin": "kotlin",
    "scala": "scala",
    "swift": "swift",
    "lua": "lua",
    "bash": "bash",
    "starlark": "starlark",
    "objc": "objc",
    "dart": "dart",
    "zig": "zig",
    "groovy": "groovy",
}
