"""The one exception type for bad input."""

from __future__ import annotations

__all__ = ["InvalidRunError", "Violation", "one_line"]


def one_line(text: str, limit: int = 300) -> str:
    """Render ``text`` on one line: control characters escaped, length capped.

    Parameters
    ----------
    text : str
        Any text (``str()`` is taken of anything else), e.g. a message quoting input.
    limit : int, default 300
        At most this many characters; a longer result ends with ``…``.

    Every error line the toolkit prints goes through it, so that a value read from a
    file (a newline, a terminal escape, a bidi override) cannot break the one-line form.
    """
    out = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text))
    if len(out) > limit:
        out = out[: limit - 1] + "…"
    return out


class InvalidRunError(ValueError):
    """A run directory breaks a rule of the run format.

    Parameters
    ----------
    file : str
        The offending file, as the user named it (e.g. ``run/results.jsonl``).
    rule : str
        A short, stable identifier of the rule broken (e.g. ``success-implies-eligible``).
    message : str
        What is wrong, in plain English.
    line : int, optional
        Physical, 1-based line number (results.jsonl, or a JSON syntax error).
    pointer : str, optional
        JSON pointer into the file where the problem is (manifest.json).
    """

    def __init__(
        self,
        file: str,
        rule: str,
        message: str,
        *,
        line: int | None = None,
        pointer: str | None = None,
    ) -> None:
        self.file = str(file)
        self.rule = rule
        self.message = message
        self.line = line
        self.pointer = pointer
        super().__init__(str(self))

    @property
    def location(self) -> str:
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
        if self.pointer is not None:
            loc += f"#{self.pointer}"
        return loc

    def __str__(self) -> str:
        # Each part is capped on its own: a long quoted value never cuts the rule off the line.
        return (f"{one_line(self.location, limit=300)}: {one_line(self.message, limit=700)} "
                f"[rule: {one_line(self.rule, limit=100)}]")

    def __reduce__(self):  # keep picklable despite keyword-only arguments
        return (_rebuild, (self.file, self.rule, self.message, self.line, self.pointer))


def _rebuild(file, rule, message, line, pointer):
    return InvalidRunError(file, rule, message, line=line, pointer=pointer)


class Violation(Exception):
    """A broken rule found before its location is known: rule id and reason.

    The reader that knows the file and line turns it into :class:`InvalidRunError`.
    """

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(reason)
        self.rule = rule
        self.reason = reason
