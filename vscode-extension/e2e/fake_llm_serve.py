"""The project's fake OpenAI-compatible server (tests/fake_llm.py) as a process for the VS Code tier.

    python fake_llm_serve.py REQUESTS_LOG

Prints ``http://127.0.0.1:<port>/v1`` on one line, then serves until stdin closes. Every request it
answers is appended to REQUESTS_LOG as one JSON line (the tier counts them: Restricted Mode must send
none). Answers cite every numbered document the prompt lists (``[1] [2] ...``), then end with a
sentence that makes them stream for a few seconds (pieces of three words :data:`STREAM_DELAY` apart).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from fake_llm import FakeLLMServer, default_responder, request_text

#: Seconds between two streamed pieces (three words each): an answer streams for about 7 s, long
#: enough for the tier to see the answer tab show part of it before it is done, on a busy machine too.
STREAM_DELAY = 0.4
_TAIL = (
    "This sentence is here so that the answer takes a few seconds to stream: each piece of three words "
    "waits a moment before the next one, as a slow model would. END OF THE FAKE ANSWER."
)


def main() -> None:
    log = Path(sys.argv[1])

    def respond(request: dict) -> str | dict:
        with log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(request) + "\n")
        reply = default_responder(request)
        if not isinstance(reply, str) or reply != "FAKE ANSWER":
            return reply
        numbers = sorted({int(n) for n in re.findall(r"^\[(\d+)\] ", request_text(request), re.M)})
        cites = " ".join(f"[{n}]" for n in numbers[:6]) or "[1]"
        return f"FAKE ANSWER from the e2e server. The code is in these documents: {cites}. {_TAIL}"

    server = FakeLLMServer(respond, stream_delay=STREAM_DELAY)
    print(server.openai_base_url, flush=True)
    sys.stdin.read()
    server.close()


if __name__ == "__main__":
    main()
