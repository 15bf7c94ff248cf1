"""Figures as inline images, for the pages that show a matplotlib figure outside the report's own
figure helpers (comparison.html, board.html)."""

from __future__ import annotations

from typing import Any

__all__ = ["figure_image", "NARROW_MEDIA", "NARROW_WIDTH", "narrow_picture"]

#: Where a page is narrow (a phone): a figure with a narrow variant shows that one.
NARROW_MEDIA = "(max-width: 600px)"
#: The narrow variants' width in inches (at 100 CSS px per inch: 360 px, the width of a 420 px page's column).
NARROW_WIDTH = 3.6
_NARROW_DPI = 150  # rendered at 1.5x and declared so (srcset "1.5x"): sharp, and 360 CSS px wide


def figure_image(fig: Any, alt: str = "pass@1, pass@k and pass^k differences, B minus A, with 95% intervals") -> Any:
    """A matplotlib Figure as inline HTML ``<img>`` with alternative text (PNG without metadata: stable bytes)."""
    import base64
    import html
    import io

    from IPython.display import HTML

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return HTML(f'<img alt="{html.escape(alt)}" style="max-width: 100%" src="data:image/png;base64,{data}">')


def narrow_picture(img_html: str, narrow_fig: Any) -> str:
    """``img_html`` (a figure's ``<img>``) in a ``<picture>`` whose source on a narrow page (:data:`NARROW_MEDIA`)
    is ``narrow_fig``: the same figure drawn :data:`NARROW_WIDTH` inches wide with the same type sizes, so its
    labels stay legible where the wide one would shrink to half its size.  Both are inline PNGs without metadata;
    the ``<img>`` keeps the alternative text (one image to a screen reader)."""
    import base64
    import io

    buffer = io.BytesIO()
    narrow_fig.savefig(buffer, format="png", dpi=_NARROW_DPI, metadata={"Software": None})
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (f'<picture class="cb-pic"><source media="{NARROW_MEDIA}" '
            f'srcset="data:image/png;base64,{data} {_NARROW_DPI / 100:g}x">{img_html}</picture>')
