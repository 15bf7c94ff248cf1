"""Figures as inline images, for the pages that show a matplotlib figure outside the report's own
figure helpers (comparison.html, board.html)."""

from __future__ import annotations

from typing import Any

__all__ = ["figure_image"]


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
