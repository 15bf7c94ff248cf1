"""Escaping of run-supplied strings (pure), for HTML, Markdown and figure labels.

:func:`html_escape` and :func:`md_escape` make every run-supplied string (task
ids, run id, suite, reasons, evidence references, parameters) render as data:
markup is neutralised, and control characters, bidirectional overrides and
lone surrogates are shown as visible escapes such as ``\\u202e``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "DISPLAY_MAX",
    "html_escape",
    "md_escape",
    "plain_label",
]

#: Display cap for run-supplied strings in HTML (characters of the original text).
DISPLAY_MAX = 200


# Characters that would be invisible or would rearrange the text around them:
# C0 and C1 controls, the bidirectional marks, embeddings, overrides and
# isolates, line/paragraph separators, zero-width space, BOM, and lone
# surrogates (which cannot even be encoded as UTF-8).
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible_char(match: re.Match) -> str:
    ch = match.group()
    return _SHORT.get(ch) or f"\\u{ord(ch):04x}"


def _display_text(text: Any, max_len: int | None) -> str:
    """``text`` as a string, clipped to ``max_len`` characters, invisibles made visible."""
    if text is None:
        return ""
    s = text if isinstance(text, str) else str(text)
    if max_len is not None and len(s) > max_len:
        s = s[: max(max_len - 1, 0)] + "…"
    return _INVISIBLE.sub(_visible_char, s)


def html_escape(text: Any, *, max_len: int | None = DISPLAY_MAX) -> str:
    """Escape a run-supplied string for HTML text or a quoted attribute.

    Parameters
    ----------
    text : str or any
        Converted with ``str``; None gives ``""``.
    max_len : int or None, default 200
        Display cap in characters of the original text; longer text is cut
        and ends with an ellipsis.  None keeps everything.

    Returns
    -------
    str
        :func:`html.escape` with ``quote=True`` (``& < > " '``), after
        control characters, bidirectional overrides/isolates (U+202A-U+202E,
        U+2066-U+2069 and the marks), zero-width space, BOM and lone
        surrogates are replaced by visible escapes such as ``\\u202e``
        (``\\n``, ``\\r``, ``\\t`` for those three).
    """
    s = _display_text(text, max_len)
    return (
        s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#x27;")
    )


# Every ASCII punctuation character that means something in CommonMark or GFM
# inline text or tables; a backslash before ASCII punctuation always means the
# character itself.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~#$!{}])")


def md_escape(text: Any, *, max_len: int | None = None) -> str:
    """Escape a run-supplied string for Markdown text and table cells.

    Parameters
    ----------
    text : str or any
        Converted with ``str``; None gives ``""``.
    max_len : int or None, default None
        Optional display cap in characters, as in :func:`html_escape`.

    Returns
    -------
    str
        Backslash escapes for ``\\ ` * _ [ ] < > | & ~ # $ ! { }``, after
        newlines, control characters, bidirectional overrides, zero-width
        space, BOM and lone surrogates are replaced by visible escapes (whose
        backslash is itself escaped, so ``\\u202e`` renders literally).  The
        result is a single line that cannot open emphasis, code, links, HTML,
        entities or a table cell.
    """
    return _MD_SPECIAL.sub(r"\\\1", _display_text(text, max_len))


def plain_label(text: Any, max_len: int = 40) -> str:
    """A label for matplotlib text: one line, invisibles made visible, clipped in the middle.

    Task ids often share a long prefix, so the end is kept too: ``suite.app.task-0…-long-name``.
    """
    s = "" if text is None else str(text)
    if len(s) > max_len:
        head = (max_len - 1) * 3 // 5
        s = s[:head] + "…" + s[len(s) - (max_len - 1 - head) :]
    return _display_text(s, None)
