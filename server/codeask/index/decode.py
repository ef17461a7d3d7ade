"""How codeask turns a file's bytes into text: the one decoding every reader uses.

Decided as an editor decides (:func:`decode`), in this order:

1. a byte-order mark: UTF-32 LE/BE, UTF-8, UTF-16 LE/BE (UTF-32 LE's BOM ``FF FE 00 00`` starts with
   UTF-16 LE's, so UTF-32 is tried first); the BOM is dropped, undecodable units become U+FFFD;
2. a NUL byte in the first :data:`SNIFF_BYTES`: text only when a UTF-16 or UTF-32 decoding without a
   BOM explains it (the decoded text holds no NUL and no control character but tab and line ends,
   and at least half of it is ASCII, as source code is: the NULs are the high bytes of ASCII
   characters), otherwise binary;
3. valid UTF-8 (ASCII included): the common case, one C-speed ``bytes.decode``;
4. UTF-8 with a few bad bytes among valid multi-byte characters (no more bad bytes than good
   non-ASCII characters): UTF-8, the bad bytes as U+FFFD (legacy 8-bit text almost never forms valid
   UTF-8 sequences);
5. else ``charset-normalizer`` over the first :data:`DETECT_BYTES` (cut at a line end) chooses a legacy
   encoding (Latin-1, cp1252, cp1250, cp1251, Shift-JIS, GBK, ...) among its readings whose "chaos" (share of
   the text that looks like mojibake) is at most :data:`MAX_CHAOS`: its first when that is a multi-byte
   encoding, else the one with the most letters and common punctuation outside ASCII, then cp1252 (the same letters as Latin-1, plus ``€`` and smart
   quotes), then the detector's own order; no reading under the floor means binary. The whole file is then decoded with that encoding, bad bytes as U+FFFD.

``encoding`` is Python's canonical codec name (:func:`codecs.lookup`): ``utf-8``, ``utf-8-sig`` (a BOM),
``utf-16-le``, ``utf-16-be``, ``utf-32-le``, ``utf-32-be``, ``cp1252``, ``cp932``, ... Content hashes stay
on the raw bytes; only text is decoded here.
"""

from __future__ import annotations

import codecs
from typing import NamedTuple

__all__ = ["Decoded", "decode", "SNIFF_BYTES", "DETECT_BYTES", "MAX_CHAOS"]

#: Bytes looked at for a NUL byte (git's and grep's binary test inspect the first 8 KiB too).
SNIFF_BYTES = 8192
#: Bytes given to the detector: it samples a few 512-byte chunks of what it gets anyway, and decodes
#: all of it once per candidate encoding, so a bounded prefix keeps a 1 MB file's cost at 64 KiB's.
DETECT_BYTES = 65536
#: charset-normalizer's own default ``threshold``: the largest share of "chaos" a reading may have.
MAX_CHAOS = 0.2

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_WIDE = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
#: Control characters text may hold: tab, line ends, vertical tab, form feed, DOS end of file (Ctrl-Z)
#: and escape (ANSI colours in logs).
_CONTROLS = frozenset(chr(c) for c in range(32)) - frozenset("\t\n\x0b\x0c\r\x1a\x1b")

#: Non-letters that text outside ASCII commonly holds: curly and angle quotes, dashes, ellipsis, currency
#: (euro, pound, yen), section, degree, middle dot, bullet, times, divide, inverted marks, (c), (R), TM.
_PUNCTUATION = frozenset(
    "\u201c\u201d\u2018\u2019\u201e\u201a\u00ab\u00bb\u2039\u203a\u2013\u2014\u2026\u20ac\u00a3\u00a5\u00a7\u00b0\u00b7\u2022\u00d7\u00f7\u00a1\u00bf\u00a9\u00ae\u2122"
)


class Decoded(NamedTuple):
    """A file's ``text`` and the ``encoding`` it was read with (a canonical codec name)."""

    text: str
    encoding: str


def decode(data: bytes) -> Decoded | None:
    """``data`` (a whole file's bytes) as text, decided as the module docstring says; ``None`` when
    it is binary (no encoding explains it). Never raises."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            body = data[len(bom) :] if encoding != "utf-8-sig" else data
            return Decoded(body.decode(encoding, errors="replace"), encoding)
    if b"\x00" in data[:SNIFF_BYTES]:
        return _wide(data)
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if len(text) - len(text.encode("ascii", "ignore")) - bad >= bad:
        return Decoded(text, "utf-8")
    return _detect(data)


def _is_text(text: str) -> bool:
    """No control character but tab, line ends and form feed in ``text`` (NUL included)."""
    return _CONTROLS.isdisjoint(text)


def _wordlike(text: str) -> int:
    """How many of ``text``'s non-ASCII characters are letters or a writer's punctuation: in source
    files they are names, comments and strings, so the reading with the most of them is the one
    meant (cp775 reads Latin-1 ``ç`` as ``ń`` but ``ü`` as ``³``)."""
    return sum(1 for c in text if c > "\x7f" and (c.isalpha() or c in _PUNCTUATION))


def _wide(data: bytes) -> Decoded | None:
    """``data`` holding NUL bytes read as BOM-less UTF-16/32, when one such decoding is clean text."""
    for encoding in _WIDE:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if _is_text(text) and len(text.encode("ascii", "ignore")) * 2 >= len(text):
            return Decoded(text, encoding)
    return None


def _detect(data: bytes) -> Decoded | None:
    """The legacy encoding charset-normalizer finds for ``data``'s first :data:`DETECT_BYTES` (cut at a
    line end, so a multi-byte character is never split), ``None`` when no reading is under
    :data:`MAX_CHAOS` or the text holds control characters."""
    from charset_normalizer import from_bytes
    from charset_normalizer.utils import is_multi_byte_encoding

    sample = data
    if len(data) > DETECT_BYTES:
        cut = data.rfind(b"\n", 0, DETECT_BYTES)
        sample = data[: cut + 1] if cut > 0 else data[:DETECT_BYTES]
    matches = list(from_bytes(sample, threshold=MAX_CHAOS))
    if not matches:
        return None
    if is_multi_byte_encoding(matches[0].encoding):  # Shift-JIS, GBK, Big5...: the detector's order
        matches = matches[:1]
    ranked = [(_wordlike(str(m)), "cp1252" in m.could_be_from_charset, -n) for n, m in enumerate(matches)]
    best = matches[-max(ranked)[2]]
    encoding = "cp1252" if "cp1252" in best.could_be_from_charset else best.encoding
    text = data.decode(encoding, errors="replace")
    if not _is_text(text):
        return None
    return Decoded(text, codecs.lookup(encoding).name)
