"""Cost of the content secret scan that runs before every LLM call (codeask.query.secrets).

Usage::

    python bench/secret_scan.py [--path DIR] [--chunk-lines 60]

Cuts every ``*.py`` file under ``--path`` (default: this repository's ``server/codeask``) into
``--chunk-lines`` windows, scans each once (cold: detect-secrets runs) and again (warm: the
content-hash cache answers), and prints per-chunk and per-line milliseconds. Writes
``bench/results/secret_scan.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_result  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", type=Path, default=Path(__file__).resolve().parent.parent / "server" / "codeask")
    parser.add_argument("--chunk-lines", type=int, default=60)
    args = parser.parse_args()
    from codeask.query.secrets import scan

    started = time.perf_counter()
    scan("warm = 'up'\n", "warm.py")
    first_call = time.perf_counter() - started
    chunks = []
    for path in sorted(args.path.rglob("*.py")):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for i in range(0, len(lines), args.chunk_lines):
            chunks.append((path.name, "\n".join(lines[i : i + args.chunk_lines]) + "\n"))
    cold, warm, findings = [], [], 0
    for name, text in chunks:
        t0 = time.perf_counter()
        result = scan(text, name)
        cold.append(time.perf_counter() - t0)
        findings += len(result.findings)
        t0 = time.perf_counter()
        scan(text, name)
        warm.append(time.perf_counter() - t0)
    total_lines = sum(text.count("\n") for _, text in chunks)
    q = statistics.quantiles([c * 1000 for c in cold], n=20)
    out = {
        "chunks": len(chunks),
        "lines": total_lines,
        "chunk_lines": args.chunk_lines,
        "first_call_ms": round(first_call * 1000, 1),
        "cold_ms_p50": round(statistics.median(cold) * 1000, 2),
        "cold_ms_p95": round(q[18], 2),
        "cold_ms_per_line": round(sum(cold) * 1000 / max(1, total_lines), 3),
        "warm_ms_p50": round(statistics.median(warm) * 1000, 4),
        "findings": findings,
    }
    for key, value in out.items():
        print(f"{key:>18}: {value}")
    print(f"wrote {write_result('secret_scan', out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
