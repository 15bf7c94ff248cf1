"""Figures as inline images (capbench_nb.outputs.html.images): a PNG data URI with escaped alternative
text and stable bytes."""

from __future__ import annotations

import base64
import re

from matplotlib.figure import Figure

from capbench_nb.outputs.html.images import figure_image


def _figure() -> Figure:
    fig = Figure(figsize=(2.0, 1.0))
    fig.add_subplot().plot([0, 1], [1, 0])
    return fig


def test_a_figure_is_an_inline_png_with_escaped_alt_text_and_the_same_bytes_twice():
    html = figure_image(_figure(), alt='runs "A" & <B>').data
    m = re.fullmatch(r'<img alt="([^"]*)" style="max-width: 100%" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', html)
    assert m and m.group(1) == "runs &quot;A&quot; &amp; &lt;B&gt;"
    assert base64.b64decode(m.group(2)).startswith(b"\x89PNG\r\n\x1a\n")
    assert figure_image(_figure(), alt="x").data == figure_image(_figure(), alt="x").data
