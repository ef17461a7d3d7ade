"""``codeask ask`` and ``codeask explain``: arguments -> an :class:`~codeask.service.AskRequest` /
:class:`~codeask.service.ExplainRequest` -> :class:`~codeask.service.Service` -> text or JSON.

``ask`` is answered by a running ``codeask watch`` of the folder when there is one
(:mod:`codeask.resident`), else in-process: the question is checked before any indexing, the index
is brought up to date (:meth:`Service.refresh <codeask.service.Service.refresh>`, unless
``--no-update``), the sources are shown before the answer's LLM call and the answer streams to a
terminal.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from codeask.console import CLIError, IndexProgress, UsageError, stderr_console
from codeask.lines import split_lines

__all__ = ["cmd_ask", "cmd_explain", "question_from_stdin", "STDIN_QUESTION_BYTES"]


def _ask_resident(args) -> int | None:
    """Answer through a running ``codeask watch`` of the same folder (:mod:`codeask.resident`);
    ``None`` when there is none, or it answers with other LLM settings (then ``ask`` runs in-process)."""
    from codeask.resident import ask_resident, socket_path

    root = Path(args.path).resolve()
    if args.model or args.provider or args.summary or not root.is_dir() or not socket_path(root).exists():
        return None
    from codeask.settings import load_settings

    settings = load_settings(root)
    resolved = None if args.no_llm else settings.resolved_llm()
    if resolved is None and not args.no_llm and settings.llm.provider != "auto":
        return None  # an explicit provider without a key: the in-process path reports it
    request = {
        "question": args.question,
        "top_k": args.top_k,
        "max_files": args.max_files,
        "no_llm": args.no_llm,
        "llm": resolved.describe() if resolved is not None else None,
    }
    reply = ask_resident(root, request)
    if reply is None or reply.get("kind") == "mismatch":
        return None
    if not reply.get("ok"):
        if reply.get("kind") == "question":
            from codeask.service import QuestionError

            raise QuestionError(reply["error"])
        raise CLIError(reply.get("error") or "the running watch failed to answer")
    out = reply["answer"]
    print(json.dumps(out, ensure_ascii=False) if args.json else out["markdown"])
    if out.get("error"):
        print(f"codeask: {out['error']}", file=sys.stderr)
        return 1
    return 0


#: Bytes of standard input read for ``ask PATH -``: the most characters any setting accepts
#: (``retrieval.max_question_chars`` <= 1,000,000), 4 bytes each at most, and one more character.
STDIN_QUESTION_BYTES = 4 * 1_000_001


def question_from_stdin() -> str:
    """The question of ``codeask ask PATH -``: standard input, decoded as a file is
    (:func:`codeask.service.decode_question`: a BOM, else UTF-8, else the detected legacy encoding,
    so a report PowerShell saved as UTF-16 reads), at most :data:`STDIN_QUESTION_BYTES` bytes (more
    is refused by the length check).

    Raises:
        UsageError: standard input is not text.
    """
    from codeask.service import decode_question

    text = decode_question(sys.stdin.buffer.read(STDIN_QUESTION_BYTES))
    if text is None:
        raise UsageError("ask", "standard input is not text (binary data); pipe a text file to ask PATH -")
    return text


def cmd_ask(args) -> int:
    """``codeask ask PATH QUESTION``; returns the exit code (1 for a cut-off answer or an LLM error)."""
    from codeask.cli_service import folder_first, open_service

    folder_first("ask", args.path, args.question, args.argv)
    if args.question == "-":
        args.question = question_from_stdin()
    served = _ask_resident(args)
    if served is not None:
        return served
    flags = {"llm.model": args.model, "llm.provider": args.provider}
    if args.summary:
        flags["summary.enabled"] = True
    service = open_service([args.path], flags)
    request = service.ask_request(args.question, top_k=args.top_k, max_files=args.max_files, no_llm=args.no_llm)
    if not args.no_llm:
        service.check_llm()  # an explicit provider without a key fails here, before any indexing
    no_index = f"{service.roots[0]} has no index yet: run 'codeask index {args.path}' first, or ask without --no-update"
    _bring_up_to_date(service, args, no_index)
    answer = _answer(service, request, args)
    # an index folder with no file recorded (a first run killed early) and nothing building it either
    if args.no_update and not answer.sources and service.index_presence() == "empty":
        raise CLIError(no_index)
    return _print_answer(service, answer, args)


def _bring_up_to_date(service, args, no_index: str) -> None:
    """Update the index before asking, unless ``--no-update`` (a note when it is read-only or
    another process writes it: answered as it is).

    Raises:
        CLIError: ``--no-update`` and no index (after a settings error, which comes first).
    """
    if args.no_update:
        refreshed = service.refresh(update=False)
    else:
        with IndexProgress.for_command(args.json) as progress:
            refreshed = service.refresh(progress)
    if refreshed.outcome == "read-only":
        note = f"{refreshed.message}: answering from it as it is (it cannot be updated)"
        stderr_console().print(f"[yellow]note:[/] {note}", highlight=False)
    elif refreshed.outcome == "locked":
        stderr_console().print(
            f"[yellow]note:[/] {refreshed.message}; answering from the index as it is", highlight=False
        )
    elif args.no_update and service.index_presence() == "none":
        service.check_settings()  # a settings error (unknown step, missing rerank model) comes first
        raise CLIError(no_index)  # and asking would create an empty index folder


def _answer(service, request, args):
    """The :class:`~codeask.service.Answer`, its sources shown before the LLM call (stdout on a
    terminal, else stderr) and its text streamed to a terminal (``args.streamed`` says so)."""
    tty = not args.json and sys.stdout.isatty()
    args.streamed = False

    def show_sources(sources) -> None:
        lines = "\n".join(
            f"{i}. {s.path}:{s.start_line}-{s.end_line}"
            + "".join(f", {x['start_line']}-{x['end_line']}" for x in s.spans[1:])
            for i, s in enumerate(sources, 1)
        )
        if tty:
            print(f"Sources:\n{lines}\n", flush=True)
        else:
            print(f"Sources (the answer follows):\n{lines}", file=sys.stderr, flush=True)

    def stream(delta: str) -> None:
        args.streamed = True
        sys.stdout.write(delta)
        sys.stdout.flush()

    return service.ask(request, stream=stream if tty else None, on_sources=show_sources)


def _print_answer(service, answer, args) -> int:
    """Print ``answer`` (JSON, the footer after a streamed answer, or the markdown) and its warnings;
    returns 1 when it is cut off or an LLM call failed."""
    if args.json:
        print(json.dumps(answer.to_json(), ensure_ascii=False))
    elif args.streamed and answer.finish_reason is not None:
        print(answer.footer())  # the answer itself was streamed already
    elif args.streamed:
        print("\n\n" + answer.markdown)  # the LLM failed: show what ask fell back to
    else:
        print(answer.markdown)
    return _report_outcome(service, answer, "answer")


def _report_outcome(service, result, what: str) -> int:
    """Print the warnings of ``result`` (an answer or explanation) not printed when the service was
    opened, and why it failed; returns the exit code (1 when cut off or an LLM call failed)."""
    for line in result.warnings:
        if line not in service.warnings:
            print(f"codeask: warning: {line}", file=sys.stderr)
    status = 0
    if result.truncated:
        print(f"codeask: {what} cut off ({result.cut_reason})", file=sys.stderr)
        status = 1
    if result.error:
        print(f"codeask: {result.error}", file=sys.stderr)
        status = 1
    return status


def _explain_file(root: Path, file: str) -> tuple[Path, bool]:
    """``FILE`` as the user typed it -> (absolute path, whether it exists): an absolute ``FILE`` as
    is; a relative one against the workspace folder ``root`` first, then against the current
    folder (a path tab-completed in a subfolder); the folder's path when it is in neither."""
    if Path(file).is_absolute():
        path = Path(os.path.abspath(file))
        return path, os.path.lexists(path)
    for base in (Path(root), Path.cwd()):
        path = Path(os.path.abspath(base / file))
        if os.path.lexists(path):
            return path, True
    return Path(os.path.abspath(Path(root) / file)), False


def _explain_target(service, root: Path, target: str, args):
    """``FILE[:START[-END]]`` -> an :class:`~codeask.service.ExplainRequest` (the whole file
    without a range, a range running past the last line cut there). ``FILE`` is found by
    :func:`_explain_file` and read once, here (:meth:`Service.read_source`: the indexer's rules).

    Raises:
        UsageError: bad line numbers (not ``START-END``, 1-based, ``START <= END``, or starting past
            the file's last line), exit code 2.
        CLIError: the file does not exist, or codeask does not read it (a folder, a secret, binary,
            too large or minified file, a link out of the folder), exit code 1.
    """
    from codeask.service import ExplainRequest, NotExplainable

    if not target.strip():
        raise UsageError("explain", "the file to explain is empty: use FILE or FILE:START-END")
    file, start, end, lines, sep, head = _split_target(target)
    path, found = _explain_file(root, file)
    if not found:
        if sep and head and _explain_file(root, head)[1]:  # FILE:something that is not a line range
            raise UsageError("explain", f"bad line range {lines!r}: use FILE:START-END, 1-based")
        where = f"{root}" if Path(file).is_absolute() else f"{root} or the current folder {Path.cwd()}"
        raise CLIError(f"file not found: {file}" + ("" if Path(file).is_absolute() else f" (in {where})"))
    try:
        text = service.read_source(str(path))
    except NotExplainable as exc:
        raise CLIError(str(exc)) from None
    count = len(split_lines(text))  # codeask's line model
    if end is None:  # the whole file
        end = max(start, count)
    elif start > count:
        raise UsageError("explain", f"line {start} is past the end of {file} ({count:,} lines)")
    end = min(end, max(start, count))
    return ExplainRequest(str(path), start, end, text=text, brief=args.brief, no_llm=args.no_llm)


def _split_target(target: str) -> tuple[str, int, int | None, str, str, str]:
    """``FILE[:START[-END]]`` -> ``(file, start, end or None, the range text, ":" or "", the part
    before the last colon)``.

    Raises:
        UsageError: a range that is not 1-based ``START <= END``.
    """
    file, start, end = target, 1, None
    head, sep, lines = target.rpartition(":")
    if bool(sep and lines and head) and all(part.isdigit() for part in lines.split("-", 1)):
        file = head
        first, _, last = lines.partition("-")
        start, end = int(first), int(last or first)
        if start < 1 or end < start:
            raise UsageError("explain", f"bad line range {lines!r}: use START-END, 1-based, START <= END")
    return file, start, end, lines, sep, head


def cmd_explain(args) -> int:
    """``codeask explain PATH FILE[:START[-END]]``; returns the exit code."""
    from codeask.cli_service import open_service
    from codeask.service import NotExplainable

    service = open_service([args.path])
    root = Path(service.roots[0])
    request = _explain_target(service, root, args.target, args)
    if service.root_of(request.path) is None:
        print(f"codeask: note: {request.path} is outside the workspace folder {root}", file=sys.stderr)
    try:
        service.check_explain(request)  # blank lines: refused in one line before any indexing
        with IndexProgress.for_command(args.json) as progress:  # a cold folder takes minutes
            refreshed = service.refresh(progress)
        if refreshed.outcome in ("read-only", "locked"):
            print(f"codeask: note: {refreshed.message}; explaining from the index as it is", file=sys.stderr)
        result = service.explain(request)
    except NotExplainable as exc:
        raise CLIError(str(exc)) from None
    print(json.dumps(result.to_json(), ensure_ascii=False) if args.json else result.markdown)
    return _report_outcome(service, result, "explanation")
