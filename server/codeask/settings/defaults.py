"""The default values of the list settings and the file names settings are read from: secret-file
patterns, excludes, build-output folders, down-weighted paths, template names."""

from __future__ import annotations

__all__ = [
    "CONFIG_FILE",
    "USER_CONFIG_FILE",
    "USER_CONFIG_ENV",
    "DEFAULT_SECRET_PATTERNS",
    "DEFAULT_EXCLUDES",
    "DEFAULT_BUILD_OUTPUTS",
    "DEFAULT_DOWNWEIGHT_PATTERNS",
    "DEFAULT_TEST_PATTERNS",
    "DEFAULT_DOCS_PATTERNS",
    "DEFAULT_CONFIG_PATTERNS",
    "TEMPLATE_NAMES",
]

CONFIG_FILE = ".codeask.toml"
#: The trusted user config file's name, in :func:`user_config_path`'s dir.
USER_CONFIG_FILE = "codeask.toml"
#: Environment variable naming the dir of the user config file (tests point it at a temp dir).
USER_CONFIG_ENV = "CODEASK_CONFIG_DIR"

#: Files that may hold credentials. They are never read, indexed or sent to an LLM.
#: gitignore syntax; a workspace's ``index.secret_patterns`` adds to them. Names like ``secrets``/``credentials``
#: match data-file extensions only: ``secrets.py`` is source code (a module that *handles* secrets),
#: and credentials inside code are caught by the content scan before any LLM call.
DEFAULT_SECRET_PATTERNS: list[str] = [
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.gpg",
    "*.asc",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "credentials.yaml",
    "credentials.yml",
    "credentials.toml",
    "credentials.ini",
    "credentials.cfg",
    "credentials.conf",
    "credentials.env",
    "credentials.txt",
    "credentials.xml",
    "credentials.properties",
    "*credentials*.json",
    "secrets.json",
    "secrets.yaml",
    "secrets.yml",
    "secrets.toml",
    "secrets.ini",
    "secrets.cfg",
    "secrets.conf",
    "secrets.env",
    "secrets.txt",
    "secrets.xml",
    "secrets.properties",
    "*.secret",
    "*.secrets",
    "service-account*.json",
    ".aws/",
    ".ssh/",
    ".gnupg/",
    "**/.docker/config.json",
    "kubeconfig",
    ".kube/",
    "terraform.tfstate*",
    "*.tfvars",
]

#: Folders and files never walked, in any workspace (gitignore syntax), unless a ``!pattern`` in the
#: user's ``.gitignore`` / ``.codeaskignore`` re-includes them. ``env`` is also a common source folder
#: name, so it is excluded only at the root. Build-output folder names are in
#: :data:`DEFAULT_BUILD_OUTPUTS`, excluded only where they hold build output.
DEFAULT_EXCLUDES: list[str] = [
    ".git",
    ".hg/",
    ".svn/",
    ".jj/",
    "node_modules/",
    "bower_components/",
    ".venv/",
    "venv/",
    "/env/",
    ".tox/",
    ".nox/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".ipynb_checkpoints/",
    ".cache/",
    ".gradle/",
    ".idea/",
    ".vscode-test/",
    ".next/",
    ".nuxt/",
    ".svelte-kit/",
    "*.egg-info/",
    ".eggs/",
    "site-packages/",
    "*.pyc",
    "*.pyo",
    "*.so",
    "*.dylib",
    "*.dll",
    "*.class",
    "*.o",
    "*.a",
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.lock",
    "package-lock.json",
    "*.lance",
    ".codeask/",
]

#: Folder names that build, bundle and coverage tools write to, and that are also real source folder
#: names (coverage.py's ``coverage/`` package, a ``src/build/`` module). Such a folder is excluded only
#: where it is build output: directly in the root or beside a project file of a nested project
#: (``pyproject.toml``, ``package.json``, ...), and only when it is not itself a source package (no
#: ``__init__.py`` or project file inside). See :mod:`codeask.index.walk`.
DEFAULT_BUILD_OUTPUTS: list[str] = ["build", "dist", "out", "target", "coverage", "htmlcov"]

#: Test files (gitignore syntax): the ``test`` kind of :mod:`codeask.index.kinds`.
DEFAULT_TEST_PATTERNS: list[str] = [
    "test/",
    "tests/",
    "testing/",
    "__tests__/",
    "test_*.py",
    "*_test.py",
    "*_test.go",
    "*_test.rs",
    "*_spec.rb",
    "*Test.java",
    "*Tests.java",
    "*.test.*",
    "*.spec.*",
    "conftest.py",
    # a file named for tests: hiredis' test.c, a Rust crate's tests.rs, a Django app's tests.py (test.c
    # was in the top 10 of 27 of hiredis' 29 rows of bench/multifile, needed in none, first in most)
    "test.*",
    "tests.*",
]

#: Documentation and project prose: the ``docs`` kind of :mod:`codeask.index.kinds`.
DEFAULT_DOCS_PATTERNS: list[str] = [
    "doc/",
    "docs/",
    "*.md",
    "*.rst",
    "*.txt",
    "*.adoc",
    "README*",
    "LICENSE*",
    "LICENCE*",
    "COPYING*",
    "NOTICE*",
    "CODEOWNERS",
    "CHANGES*",
    "CHANGELOG*",
    "HISTORY*",
    "NEWS*",
    "[Cc]hange[Ll]og*",
    "[Cc]hanges*",
    "[Hh]istory*",
    "[Nn]ews*",
    "AUTHORS*",
    "CONTRIBUTORS*",
    "CONTRIBUTING*",
]

#: Non-code project files: issue/PR templates, CI, container, lint and tool configs (issue 19): the
#: ``config`` kind of :mod:`codeask.index.kinds`.
DEFAULT_CONFIG_PATTERNS: list[str] = [
    ".github/",
    ".gitlab/",
    ".circleci/",
    ".azure-pipelines/",
    ".gitlab-ci.yml",
    ".travis.yml",
    "appveyor.yml",
    "azure-pipelines.yml",
    "action.y*ml",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    ".readthedocs.y*ml",
    "codecov.y*ml",
    ".codecov.y*ml",
    "docker-compose*.y*ml",
    "compose*.y*ml",
    ".dockerignore",
    ".gitignore",
    ".gitattributes",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "mypy.ini",
    ".mypy.ini",
    "pytest.ini",
    ".coveragerc",
    ".flake8",
    ".pylintrc",
    "pylintrc",
    ".ruff.toml",
    "ruff.toml",
    ".editorconfig",
    ".eslintrc*",
    ".prettierrc*",
    ".stylelintrc*",
    ".markdownlint*",
    ".yamllint*",
    ".golangci.y*ml",
    "rustfmt.toml",
    "clippy.toml",
    ".clang-format",
    ".clang-tidy",
    "MANIFEST.in",
    "PKG-INFO",
]

#: Paths whose chunks rank lower (not excluded): tests, docs and configs (the kinds' own patterns,
#: so ``retrieval.downweight_patterns`` and :mod:`codeask.index.kinds` never disagree), plus
#: examples and benchmarks. Users asking how something works, or pasting what went wrong, want the
#: implementation first; see shared/eval/FINDINGS.md, point 3. A question that names such a file by
#: name still finds it (``HybridRetrieve.downweighted_for``).
DEFAULT_DOWNWEIGHT_PATTERNS: list[str] = [
    *DEFAULT_TEST_PATTERNS,
    *DEFAULT_DOCS_PATTERNS,
    "example/",
    "examples/",
    "benchmarks/",
    *DEFAULT_CONFIG_PATTERNS,
]

#: The template names users may override under ``[templates]``.
TEMPLATE_NAMES = ("subquestions", "answer", "document", "rerank", "summary", "explain")
