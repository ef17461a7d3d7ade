"""Tests for codeask.index.walk: real folders under tmp_path, no mocks."""

from __future__ import annotations

import collections
import hashlib
import os
import tempfile
from pathlib import Path

import pytest

from codeask.index.filetext import MAX_LINE_LENGTH, FileText, read_text
from codeask.index.walk import SKIP_REASONS, FileEntry, Ignorer, entry_for, file_entry, is_secret, walk
from codeask.settings import IndexSettings
from codeask.settings.defaults import DEFAULT_EXCLUDES, DEFAULT_SECRET_PATTERNS


def write(root: Path, rel: str, content: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def paths(result) -> list[str]:
    return [f.path for f in result.files]


@pytest.fixture
def settings() -> IndexSettings:
    return IndexSettings()


# -- ignore rules -------------------------------------------------------------------------


def test_nested_gitignore_with_negation(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, ".gitignore", "*.log\n")
    write(tmp_path, "a.log", "log\n")
    write(tmp_path, "main.py")
    write(tmp_path, "sub/.gitignore", "!keep.log\n")
    write(tmp_path, "sub/keep.log", "keep\n")
    write(tmp_path, "sub/drop.log", "drop\n")
    write(tmp_path, "other/keep.log", "not kept here\n")

    result = walk(tmp_path, settings)

    assert paths(result) == [".gitignore", "main.py", "sub/.gitignore", "sub/keep.log"]
    assert result.skipped == collections.Counter({"ignored": 3})
    ign = Ignorer(tmp_path, settings)
    assert ign.reason("sub/keep.log") is None
    assert ign.reason("sub/drop.log") == "ignored"
    assert ign.reason("other/keep.log") == "ignored"
    assert ign.reason("main.py") is None


def test_root_anchored_and_dir_only_patterns(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, ".gitignore", "/top.txt\ngen/\n")
    write(tmp_path, "top.txt")  # anchored: ignored
    write(tmp_path, "pkg/top.txt")  # anchored pattern does not apply below the root
    write(tmp_path, "gen/a.py")  # dir-only: the folder is skipped once
    write(tmp_path, "pkg/gen/b.py")  # unanchored dir pattern: any depth
    write(tmp_path, "pkg/gen.py")  # a file named like the dir pattern stays
    write(tmp_path, "pkg/sub/gen", "a file, not a folder\n")  # dir-only pattern skips folders only

    result = walk(tmp_path, settings)

    assert paths(result) == [".gitignore", "pkg/gen.py", "pkg/sub/gen", "pkg/top.txt"]
    assert result.skipped == collections.Counter({"ignored": 3})  # top.txt, gen/, pkg/gen/
    ign = Ignorer(tmp_path, settings)
    assert ign.reason("gen", is_dir=True) == "ignored"
    assert ign.reason("gen/") == "ignored"
    assert ign.reason("gen/a.py") == "ignored"  # parent folder ignored
    assert ign.reason("pkg/sub/gen") is None
    assert ign.reason("pkg/top.txt") is None


def test_gitignore_in_plain_folder_and_subfolder(tmp_path: Path, settings: IndexSettings) -> None:
    # no .git anywhere: .gitignore files still apply, each relative to its own folder
    assert not (tmp_path / ".git").exists()
    write(tmp_path, "proj/.gitignore", "/local.py\n*.tmp\n")
    write(tmp_path, "proj/local.py")
    write(tmp_path, "proj/x.tmp")
    write(tmp_path, "proj/deep/local.py")  # /local.py is anchored to proj/
    write(tmp_path, "proj/deep/y.tmp")
    write(tmp_path, "local.py")  # outside proj/: unaffected

    result = walk(tmp_path, settings)

    assert paths(result) == ["local.py", "proj/.gitignore", "proj/deep/local.py"]
    assert result.skipped == collections.Counter({"ignored": 3})


def test_codeaskignore(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, ".gitignore", "generated/\n")
    write(tmp_path, ".codeaskignore", "fixtures/\n*.snap\n!generated/\n")
    write(tmp_path, "fixtures/data.py")
    write(tmp_path, "tests/case.snap", "snap\n")
    write(tmp_path, "generated/api.py")  # re-included by .codeaskignore
    write(tmp_path, "src/app.py")

    result = walk(tmp_path, settings)

    # .codeaskignore is codeask's own file: never indexed (nor .codeask.toml)
    assert paths(result) == [".gitignore", "generated/api.py", "src/app.py"]
    assert result.skipped == collections.Counter({"ignored": 2, "excluded": 1})


def test_default_excludes(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, ".git/config", "[core]\n")
    write(tmp_path, "node_modules/left-pad/index.js", "module.exports = 1\n")
    write(tmp_path, "web/node_modules/x/index.js", "module.exports = 1\n")
    write(tmp_path, ".venv/lib/site.py")
    write(tmp_path, "pkg/__pycache__/mod.cpython-311.pyc", b"\x00\x01")
    write(tmp_path, "pkg/mod.py")
    write(tmp_path, "web/app.min.js", "var a=1;\n")

    result = walk(tmp_path, settings)

    assert paths(result) == ["pkg/mod.py"]
    # .git/, node_modules/ (x2), .venv/, __pycache__/, *.min.js
    assert result.skipped == collections.Counter({"excluded": 6})
    ign = Ignorer(tmp_path, settings)
    assert ign.reason(".git/config") == "excluded"
    assert ign.reason("node_modules", is_dir=True) == "excluded"


def test_a_git_file_of_a_worktree_or_submodule_is_never_indexed(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, ".git", "gitdir: /elsewhere/.git/worktrees/review\n")
    write(tmp_path, "vendor/lib/.git", "gitdir: ../../.git/modules/lib\n")
    write(tmp_path, "pkg/mod.py")
    result = walk(tmp_path, settings)
    assert paths(result) == ["pkg/mod.py"]
    assert Ignorer(tmp_path, settings).reason(".git") == "excluded"


def test_build_output_names_excluded_only_where_they_are_build_output(tmp_path: Path, settings: IndexSettings) -> None:
    """Issue 18.1: ``build/``, ``dist/``, ``coverage/`` are source folders too."""
    write(tmp_path, "setup.py", "from setuptools import setup\n")
    write(tmp_path, "src/build/rules.py", "def c(): pass\n")  # a package module named build
    write(tmp_path, "coverage/__init__.py")  # coverage.py's own package, at the root of its sdist
    write(tmp_path, "coverage/html.py")
    write(tmp_path, "build/lib/pkg/mod.py")  # setuptools' build output at the root
    write(tmp_path, "dist/pkg-1.0.tar.gz", b"\x1f\x8b")
    write(tmp_path, "web/package.json", "{}\n")  # a nested project: its dist/ is output
    write(tmp_path, "web/dist/bundle.js", "var a = 1;\n")
    write(tmp_path, "web/src/dist/format.js", "export const f = 1;\n")  # not beside a project file
    write(tmp_path, "tools/cache/CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n")
    write(tmp_path, "tools/cache/blob.py")  # a tagged cache folder, whatever its name

    result = walk(tmp_path, settings)

    assert paths(result) == [
        "coverage/__init__.py", "coverage/html.py", "setup.py", "src/build/rules.py",
        "web/package.json", "web/src/dist/format.js",
    ]
    assert result.skipped == collections.Counter({"excluded": 4})  # build/, dist/, web/dist/, tools/cache/
    ign = Ignorer(tmp_path, settings)  # the path-only check (watcher, live updates) agrees
    assert ign.reason("src/build/rules.py") is None
    assert ign.reason("coverage/html.py") is None
    assert ign.reason("web/src/dist/format.js") is None
    assert ign.reason("build/lib/pkg/mod.py") == "excluded"
    assert ign.reason("web/dist/bundle.js") == "excluded"
    assert ign.reason("tools/cache/blob.py") == "excluded"


def test_user_ignore_files_re_include_default_excludes(tmp_path: Path, settings: IndexSettings) -> None:
    """Issue 18.1: a ``!pattern`` in .gitignore / .codeaskignore brings a default exclude back, but
    never VCS metadata or a secret."""
    write(tmp_path, "build/gen/api.py")  # build output by position, re-included by .gitignore
    write(tmp_path, "node_modules/local-lib/index.js", "module.exports = 1\n")  # by .codeaskignore
    write(tmp_path, "node_modules/left-pad/index.js", "module.exports = 2\n")
    write(tmp_path, ".git/config", "[remote]\n")
    write(tmp_path, ".env", "KEY=1\n")
    write(tmp_path, ".gitignore", "!build/\n!.git/\n!.env\n")
    write(tmp_path, ".codeaskignore", "!node_modules/\nnode_modules/*\n!node_modules/local-lib/\n")

    result = walk(tmp_path, settings)

    assert paths(result) == [".gitignore", "build/gen/api.py", "node_modules/local-lib/index.js"]
    # excluded: .git/ and .codeaskignore (codeask's own file)
    assert result.skipped == collections.Counter({"excluded": 2, "secret": 1, "ignored": 1})
    assert Ignorer(tmp_path, settings).reason(".codeaskignore") == "excluded"
    ign = Ignorer(tmp_path, settings)
    assert ign.reason("build/gen/api.py") is None
    assert ign.reason("node_modules/local-lib/index.js") is None
    assert ign.reason("node_modules/left-pad/index.js") == "ignored"
    assert ign.reason(".git/config") == "excluded"
    assert ign.reason(".env") == "secret"


def test_an_added_exclude(tmp_path: Path) -> None:
    write(tmp_path, "vendor/lib.py")
    write(tmp_path, "src/a.py")
    result = walk(tmp_path, IndexSettings(exclude=[*DEFAULT_EXCLUDES, "vendor/"]))
    assert paths(result) == ["src/a.py"]
    assert result.skipped == collections.Counter({"excluded": 1})


def test_secrets(tmp_path: Path) -> None:
    settings = IndexSettings(secret_patterns=[*DEFAULT_SECRET_PATTERNS, "*.vault"])
    for rel in [".env", ".env.local", "deploy/id_rsa", "certs/server.pem",
                "config/credentials.json", "ops/prod.vault"]:
        write(tmp_path, rel, "SECRET=1\n")
    write(tmp_path, "home/.ssh/known_hosts", "host\n")  # a secret folder counts once
    write(tmp_path, "app.py")
    # negation in a .gitignore must not re-include a secret
    write(tmp_path, ".gitignore", "!.env\n!*.pem\n")

    result = walk(tmp_path, settings)

    assert paths(result) == [".gitignore", "app.py"]
    assert result.skipped == collections.Counter({"secret": 7})
    for rel in [".env", ".env.local", "deploy/id_rsa", "certs/server.pem",
                "config/credentials.json", "ops/prod.vault", "home/.ssh/known_hosts", ".ssh/"]:
        assert is_secret(rel, settings), rel
    assert not is_secret("app.py", settings)
    assert not is_secret("ops/prod.vault", IndexSettings())
    assert not is_secret("src/environment.py", settings)
    for code in ("server/query/secrets.py", "src/credentials.py", "lib/secrets.ts"):  # code, not data
        assert not is_secret(code, settings), code
    for data in ("deploy/secrets.yaml", "credentials.ini", "conf/secrets.json", "app/credentials.toml"):
        assert is_secret(data, settings), data
    ign = Ignorer(tmp_path, settings)
    assert ign.reason(".env") == "secret"
    assert ign.reason("home/.ssh/known_hosts") == "secret"


def test_secret_checked_before_exclude(tmp_path: Path, settings: IndexSettings) -> None:
    ign = Ignorer(tmp_path, settings)
    assert ign.reason("build/.env") == "secret"
    assert ign.reason("build/x.py") == "excluded"


def test_gitignore_reread_when_changed(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, "a.log")
    write(tmp_path, "sub/b.tmp")
    ign = Ignorer(tmp_path, settings)
    assert ign.reason("a.log") is None
    assert ign.reason("sub/b.tmp") is None
    write(tmp_path, ".gitignore", "*.log\n")
    write(tmp_path, "sub/.gitignore", "*.tmp\n")
    assert ign.reason("a.log") == "ignored"
    assert ign.reason("sub/b.tmp") == "ignored"
    # same size, new content, bumped mtime
    gi = write(tmp_path, ".gitignore", "*.txt\n")
    st = gi.stat()
    os.utime(gi, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    assert ign.reason("a.log") is None
    assert ign.reason("a.txt") == "ignored"
    (tmp_path / "sub/.gitignore").unlink()
    assert ign.reason("sub/b.tmp") is None
    # walk() with the same Ignorer sees the current files too
    result = walk(tmp_path, settings, ign)
    assert paths(result) == [".gitignore", "a.log", "sub/b.tmp"]
    ign.refresh()
    assert ign.reason("a.txt") == "ignored"


# -- read_text ------------------------------------------------------------------------------


def test_read_text_plain(tmp_path: Path, settings: IndexSettings) -> None:
    p = write(tmp_path, "a.py", "print('hé')\n")
    got = read_text(p, settings)
    assert isinstance(got, FileText)
    assert got.text == "print('hé')\n"
    raw = p.read_bytes()
    assert got.content_hash == hashlib.sha256(raw).hexdigest()
    assert got.size == len(raw)


def test_read_text_bom_stripped(tmp_path: Path, settings: IndexSettings) -> None:
    p = write(tmp_path, "bom.py", b"\xef\xbb\xbfx = 1\n")
    got = read_text(p, settings)
    assert isinstance(got, FileText)
    assert got.text == "x = 1\n"
    assert got.size == 9


def test_binary(tmp_path: Path, settings: IndexSettings) -> None:
    p = write(tmp_path, "img.dat", b"GIF89a\x00\x01\x02" + b"a" * 100)
    assert read_text(p, settings) == "binary"


def test_too_large(tmp_path: Path) -> None:
    small = IndexSettings(max_file_bytes=100)
    big = write(tmp_path, "big.py", "x = 1\n" * 50)
    ok = write(tmp_path, "ok.py", "x = 1\n" * 10)
    assert read_text(big, small) == "too_large"
    assert isinstance(read_text(ok, small), FileText)
    # walk() lists by path only; size is reported for later stages
    result = walk(tmp_path, small)
    assert {f.path: f.size for f in result.files} == {"big.py": 300, "ok.py": 60}


def test_minified_js_skipped_but_long_literal_kept(tmp_path: Path, settings: IndexSettings) -> None:
    bundle = "var a=" + ";".join(f"function f{i}(x){{return x+{i}}}" for i in range(200)) + "\n"
    js = write(tmp_path, "bundle.js", bundle)
    assert len(bundle) > MAX_LINE_LENGTH
    assert read_text(js, settings) == "minified"

    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(100))
    src = 'DATA = "' + "A" * 1500 + '"\n' + body
    py = write(tmp_path, "data.py", src)
    got = read_text(py, settings)
    assert isinstance(got, FileText)
    assert got.text == src


def test_latin1_decoded_as_a_legacy_encoding_hash_on_the_bytes(tmp_path: Path, settings: IndexSettings) -> None:
    p = write(tmp_path, "legacy.py", "name = 'café'  # à côté\n".encode("latin-1"))
    got = read_text(p, settings)
    assert isinstance(got, FileText)
    assert got.text == "name = 'café'  # à côté\n" and got.encoding == "cp1252"
    assert got.content_hash == hashlib.sha256(p.read_bytes()).hexdigest()


def test_utf8_with_one_bad_byte_stays_utf8(tmp_path: Path, settings: IndexSettings) -> None:
    p = write(tmp_path, "mixed.py", "name = 'naïve café'\n".encode() + b"# \xff\n")
    got = read_text(p, settings)
    assert isinstance(got, FileText)
    assert got.text == "name = 'naïve café'\n# \ufffd\n" and got.encoding == "utf-8"


def test_empty_file(tmp_path: Path, settings: IndexSettings) -> None:
    p = write(tmp_path, "__init__.py", "")
    result = walk(tmp_path, settings)
    assert result.files == [FileEntry("__init__.py", str(p), 0, p.stat().st_mtime_ns)]
    got = read_text(p, settings)
    assert got == FileText(text="", content_hash=hashlib.sha256(b"").hexdigest(), size=0)


def test_deleted_between_walk_and_read(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, "gone.py")
    result = walk(tmp_path, settings)
    (entry,) = result.files
    Path(entry.abs_path).unlink()
    assert read_text(entry.abs_path, settings) == "vanished"


def test_read_text_on_folder_is_unreadable(tmp_path: Path, settings: IndexSettings) -> None:
    assert read_text(tmp_path, settings) == "unreadable"


# -- walking: symlinks, permissions, shapes ---------------------------------------------------


def test_walk_result_shape(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, "src/requests/sessions.py")
    write(tmp_path, "b.py")
    write(tmp_path, "A.py")
    result = walk(tmp_path, settings)
    assert paths(result) == sorted(["src/requests/sessions.py", "b.py", "A.py"])
    entry = result.files[-1]
    assert entry.path == "src/requests/sessions.py"
    assert entry.abs_path == str(tmp_path / "src" / "requests" / "sessions.py")
    assert os.path.isabs(entry.abs_path)
    assert entry.size == 6
    assert entry.mtime_ns == os.stat(entry.abs_path).st_mtime_ns
    assert result.skipped == collections.Counter()
    assert set(result.skipped) <= set(SKIP_REASONS)


def test_walk_root_must_be_folder(tmp_path: Path, settings: IndexSettings) -> None:
    with pytest.raises(NotADirectoryError):
        walk(tmp_path / "missing", settings)


def test_symlink_loop(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, "pkg/mod.py")
    os.symlink("..", tmp_path / "pkg" / "parent")  # pkg/parent -> root
    os.symlink(".", tmp_path / "pkg" / "self")  # pkg/self -> pkg
    result = walk(tmp_path, settings)
    assert paths(result) == ["pkg/mod.py"]
    assert result.skipped == collections.Counter({"symlink_loop": 2})


def test_symlink_chain_loop_and_broken_link(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, "a.py")
    os.symlink("loop_b", tmp_path / "loop_a")
    os.symlink("loop_a", tmp_path / "loop_b")
    os.symlink("missing.py", tmp_path / "broken.py")
    result = walk(tmp_path, settings)
    assert paths(result) == ["a.py"]
    assert result.skipped == collections.Counter({"symlink_loop": 2, "vanished": 1})


def test_symlink_outside_root(tmp_path: Path, settings: IndexSettings) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(outside, "secret_plans.py")
    write(root, "main.py")
    os.symlink(outside, root / "ext_dir")
    os.symlink(outside / "secret_plans.py", root / "ext_file.py")
    os.symlink("../outside", root / "ext_rel")
    result = walk(root, settings)
    assert paths(result) == ["main.py"]
    assert result.skipped == collections.Counter({"outside_root": 3})


def test_symlink_inside_root_followed_once(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, "lib/core.py")
    write(tmp_path, "node_modules/pkg/index.js", "export default 1\n")  # excluded folder...
    os.symlink("node_modules/pkg", tmp_path / "vendored")  # ...reached through an inside link
    os.symlink("lib", tmp_path / "lib_alias")  # duplicate of a real folder
    os.symlink("lib/core.py", tmp_path / "core_alias.py")  # duplicate of a real file
    write(tmp_path, "node_modules/other/main.js", "export default 2\n")
    os.symlink("node_modules/other/main.js", tmp_path / "entry.js")  # target not walked: kept
    os.symlink("node_modules/pkg/index.js", tmp_path / "index_alias.js")  # = vendored/index.js
    result = walk(tmp_path, settings)
    assert paths(result) == ["entry.js", "lib/core.py", "vendored/index.js"]
    vendored = next(f for f in result.files if f.path == "vendored/index.js")
    assert vendored.abs_path == str(tmp_path / "vendored" / "index.js")  # keeps the link path
    assert result.skipped == collections.Counter({"excluded": 1, "symlink_loop": 3})


def test_symlink_to_a_secret_inside_root_is_secret(tmp_path: Path, settings: IndexSettings) -> None:
    """A link inside the root whose target is a secret file (by the target's own path) is skipped as
    secret by the walk and refused by entry_for, whatever the link is named."""
    write(tmp_path, ".env", "API_TOKEN=abc\n")
    write(tmp_path, "keys/id_rsa", "PRIVATE\n")
    write(tmp_path, "lib/core.py")
    os.symlink(".env", tmp_path / "notes.txt")
    os.symlink("keys/id_rsa", tmp_path / "readme_key.txt")
    os.symlink("lib/core.py", tmp_path / "core_alias.py")  # a plain duplicate: still a loop
    result = walk(tmp_path, settings)
    assert paths(result) == ["lib/core.py"]
    assert result.skipped == collections.Counter({"secret": 4, "symlink_loop": 1})
    ignorer = Ignorer(tmp_path, settings)
    for link in ("notes.txt", "readme_key.txt"):
        assert entry_for(tmp_path, link, settings, ignorer) == "secret"
        assert file_entry(tmp_path, link, settings) == "secret"
    assert isinstance(entry_for(tmp_path, "core_alias.py", settings, ignorer), FileEntry)


def test_follow_symlinks_off(tmp_path: Path) -> None:
    write(tmp_path, "lib/core.py")
    os.symlink("lib/core.py", tmp_path / "alias.py")
    os.symlink("lib", tmp_path / "lib_alias")
    result = walk(tmp_path, IndexSettings(follow_symlinks=False))
    assert paths(result) == ["lib/core.py"]
    assert result.skipped == collections.Counter()


def test_fifo_is_skipped(tmp_path: Path, settings: IndexSettings) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    write(tmp_path, "a.py")
    os.mkfifo(tmp_path / "pipe")
    result = walk(tmp_path, settings)
    assert paths(result) == ["a.py"]
    assert result.skipped == collections.Counter({"unreadable": 1})
    assert read_text(tmp_path / "pipe", settings) == "unreadable"


def _walk_as_nobody(root: Path, settings: IndexSettings, unreadable: Path, out) -> None:
    """In a forked child: drop root's privileges (uid/gid 65534), then walk and read."""
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    result = walk(root, settings)
    out.send((paths(result), dict(result.skipped), read_text(unreadable, settings)))


def test_permission_denied(settings: IndexSettings) -> None:
    """Root ignores permission bits, so the walk runs in a forked child that dropped to 'nobody'."""
    import multiprocessing
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="codeask-perm-"))  # not under root's 0700 pytest folder
    try:
        base.chmod(0o755)
        write(base, "ok.py")
        write(base, "locked/hidden.py")
        unreadable = write(base, "noread.py")
        for path in (base / "ok.py", base / "locked", base / "locked/hidden.py"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        (base / "locked").chmod(0)
        unreadable.chmod(0)
        ctx = multiprocessing.get_context("fork")
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_walk_as_nobody, args=(base, settings, unreadable, send))
        child.start()
        assert receive.poll(60), "the walk did not finish"
        listed, skipped, read = receive.recv()
        child.join(10)
        assert listed == ["noread.py", "ok.py"]
        assert skipped == {"permission_denied": 1}
        assert read == "permission_denied"
    finally:
        (base / "locked").chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def test_undecodable_name_skipped(tmp_path: Path, settings: IndexSettings) -> None:
    write(tmp_path, "a.py")
    try:
        with open(os.path.join(os.fsencode(tmp_path), b"bad\xff.py"), "wb") as fh:
            fh.write(b"x = 1\n")
    except OSError:
        pytest.skip("file system refuses non-UTF-8 names")
    result = walk(tmp_path, settings)
    assert paths(result) == ["a.py"]
    assert result.skipped == collections.Counter({"unreadable": 1})


@pytest.fixture
def fast_tmp(tmp_path: Path):
    """A real temp folder on tmpfs (/dev/shm) when there is one, else tmp_path: creating 100,000
    files on a busy disk can take minutes, which would measure the disk, not the walker."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="codeask-walk-") as folder:
            yield Path(folder)
    else:
        yield tmp_path


def _touch(path: str) -> None:
    try:
        os.mknod(path)
    except (AttributeError, PermissionError, OSError):
        with open(path, "wb"):
            pass


@pytest.mark.slow
def test_hundred_thousand_files(fast_tmp: Path, settings: IndexSettings) -> None:
    root = fast_tmp
    write(root, ".gitignore", "*.log\n")
    write(root, "d0/.gitignore", "!keep.log\n")
    n_dirs, per_dir = 100, 1000
    for d in range(n_dirs):
        folder = os.path.join(root, f"d{d}")
        os.makedirs(folder, exist_ok=True)
        for i in range(per_dir):
            _touch(os.path.join(folder, f"f{i}.py"))
    write(root, "d0/keep.log", "kept\n")
    write(root, "d1/drop.log", "dropped\n")

    result = walk(root, settings)  # its speed is measured by bench/index.py, not asserted here

    assert len(result.files) == n_dirs * per_dir + 3  # + 2 .gitignore + keep.log
    assert result.skipped == collections.Counter({"ignored": 1})


@pytest.mark.parametrize("follow", [True, False])
def test_entry_for_agrees_with_walk_on_every_path(tmp_path: Path, follow: bool) -> None:
    """Live updates check one path with entry_for: it indexes exactly the files walk lists."""
    settings = IndexSettings(follow_symlinks=follow)
    root = tmp_path / "root"
    write(root, ".gitignore", "*.log\nbuild/\n")
    write(root, "src/app.py")
    write(root, "src/debug.log", "log\n")
    write(root, "src/.env", "KEY=1\n")
    write(root, "node_modules/x/index.js")
    write(root, "dist/bundle.js")
    write(root, "pyproject.toml", "[project]\n")
    write(root, "docs/guide.md", "# Guide\n")
    write(tmp_path / "outside", "secret.py")
    os.symlink(tmp_path / "outside", root / "linked_out")
    os.symlink(root / "docs", root / "docs_link")
    os.symlink("app.py", root / "src" / "alias.py")
    os.symlink("missing.py", root / "broken.py")
    listed = {f.path for f in walk(root, settings).files}
    candidates = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        rel_dir = os.path.relpath(dirpath, root)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            candidates.add(name if rel_dir == "." else f"{rel_dir}/{name}")
    ign = Ignorer(root, settings)
    by_entry = {rel for rel in candidates if isinstance(entry_for(root, rel, settings, ign), FileEntry)}
    # walk lists a file reached twice (a link to a file already listed) once, under its real path
    assert by_entry - listed <= {"src/alias.py", "docs_link/guide.md"}
    assert listed <= by_entry
    assert "src/app.py" in by_entry and "src/.env" not in by_entry and "src/debug.log" not in by_entry
    assert entry_for(root, "linked_out/secret.py", settings, ign) == ("outside_root" if follow else "excluded")
    assert entry_for(root, "broken.py", settings, ign) == "vanished"
    assert entry_for(root, "src/.env", settings, ign) == "secret"
    assert entry_for(root, "dist/bundle.js", settings, ign) == "excluded"
