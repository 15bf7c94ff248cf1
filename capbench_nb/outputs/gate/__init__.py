"""The regression gate's files (spec section 15): gate.json, gate.md and junit.xml.

:func:`capbench_nb.metrics.gate.gate_document` decides; here the document becomes
``gate.md`` (:func:`capbench_nb.outputs.gate.markdown.gate_markdown`, fit for a CI
job summary such as ``$GITHUB_STEP_SUMMARY``), ``junit.xml``
(:func:`capbench_nb.outputs.gate.junit.gate_junit`, read by GitHub, GitLab and
Jenkins test reports) and the three files of
:func:`capbench_nb.outputs.gate.files.write_gate`.
"""
