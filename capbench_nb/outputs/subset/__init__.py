"""The representative-subset page (spec section 13): subset.json, subset.md, subset.html, estimate.json."""
