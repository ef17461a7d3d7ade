"""The README's command-line section agrees with the program.

* Every command shown in its usage block runs with ``--help``, and every ``--flag`` shown for it is
  in that help; every subcommand ``codeask --help`` lists is shown in the block.
* Every row of its "JSON output" table is run (on the sample workspace; ``PATH``, ``QUESTION``,
  ``FILE`` and ``OUT`` are filled in) and every key the row documents is in the real output
  (``a.b``: key ``b`` of object ``a``; ``a[].b``: key ``b`` of every item of list ``a``).

Rows and commands are read from the README, so a command or key added there is checked too: a
row's command must run offline on a small workspace.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.test_cli import codeask

README = Path(__file__).resolve().parents[1] / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def usage_lines() -> dict[str, str]:
    """``{subcommand: its usage text}`` from the first code block of the command-line section."""
    block = re.search(r"```\n(.*?)```", _section("Command line"), re.S).group(1)
    commands: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        if line.startswith("codeask "):
            current = line.split()[1]
            commands[current] = line
        elif line.strip() and current:
            commands[current] += " " + line.strip()
    return commands


def json_rows() -> list[tuple[str, list[str]]]:
    """``[(command, [documented keys])]`` from the "JSON output" table."""
    section = _section("Command line")
    table = section[section.index("### JSON output") :]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) == 2 and cells[0].startswith("`codeask "):
            rows.append((cells[0].strip("`"), re.findall(r"`([^`]+)`", cells[1])))
    return rows


def test_the_readme_shows_every_command_and_each_exists():
    shown = usage_lines()
    assert {"index", "ask", "status", "clean", "doctor"} <= set(shown)
    listed = codeask("--help").stdout
    helped = set(re.findall(r"^    ([a-z][a-z_-]+)\s{2,}", listed, re.M))
    assert helped, listed
    assert helped == set(shown), f"--help lists {sorted(helped)}, the README shows {sorted(shown)}"


@pytest.mark.parametrize("command", sorted(usage_lines()))
def test_every_documented_flag_is_in_help(command):
    usage = usage_lines()[command]
    proc = codeask(command, "--help")
    assert proc.returncode == 0 and f"codeask {command}" in proc.stdout
    for flag in sorted(set(re.findall(r"--[a-z][a-z-]*", usage))):
        assert flag in proc.stdout, f"{flag} is in the README for `codeask {command}` but not in its --help"


def _has(value, key: str) -> bool:
    head, _, rest = key.partition(".")
    if head.endswith("[]"):
        items = value.get(head[:-2]) if isinstance(value, dict) else None
        if not isinstance(items, list) or not items:
            return False
        return all(_has(item, rest) if rest else True for item in items)
    if not isinstance(value, dict) or head not in value:
        return False
    return _has(value[head], rest) if rest else True


@pytest.mark.parametrize("row", json_rows(), ids=lambda row: row[0].split()[1])
def test_every_documented_json_key_is_in_the_real_output(row, sample_workspace, tmp_path):
    command, keys = row
    assert keys, f"no keys documented for {command}"
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"question": "How are coupons applied?", "expected_files": ["src/shop/pricing.py"]}) + "\n",
        encoding="utf-8",
    )
    fill = {"PATH": str(sample_workspace), "QUESTION": "How are coupons applied?", "FILE": str(questions), "SYMBOL": "apply_discount",
            "OUT": str(tmp_path / "out.json")}
    argv = [fill.get(word, word) for word in shlex.split(command)][1:]
    codeask("index", str(sample_workspace))  # so that lists (sources, roots, indexes) are not empty
    out = json.loads(codeask(*argv).stdout)
    missing = [k for k in keys if not _has(out, k)]
    assert not missing, f"`{command}` output lacks the documented keys {missing}: {sorted(out)}"


def test_the_nvim_plugin_folder_has_a_readme_pointing_to_its_guide():
    """``editors/nvim`` (what a plugin manager shows) has a README whose relative links resolve, one
    of them to the guide ``docs/neovim.md``, and whose install blocks are the guide's, word for word
    (two copies that cannot drift)."""
    folder = README.parent / "editors" / "nvim"
    text = (folder / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)\)", text)
    guide = (folder / "../../docs/neovim.md").resolve()
    assert guide in {(folder / link).resolve() for link in links}
    assert all((folder / link).exists() for link in links if "://" not in link)
    blocks = re.findall(r"```(?:sh|lua)\n(.*?)```", text, re.S)
    assert blocks
    shown = guide.read_text(encoding="utf-8")
    assert [b for b in blocks if b not in shown] == []
