"""board.html: N runs side by side (``notebooks/board.ipynb``): its sections (``page``), board.md,
board.json and their verification (``files``), and the runner (``run``)."""
