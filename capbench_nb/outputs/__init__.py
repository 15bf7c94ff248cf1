"""Stage 4: metrics -> outputs: metrics.json on disk, summary.md, the report and comparison notebooks'
sections and figures, notebook execution, verification."""
