"""The flipped tasks' inline script (capbench_nb.outputs.comparison.script): only ids of our own, the
shared table code first, the data read from the section's JSON data island."""

from __future__ import annotations

import pytest

from capbench_nb.outputs.comparison.script import flips_script
from capbench_nb.outputs.html.assets import page_asset


def test_the_script_is_the_shared_table_code_then_ours_for_the_section():
    script = flips_script("cbc-0123456789ab")
    assert script.startswith(page_asset("tables.js"))
    assert 'document.getElementById("cbc-0123456789ab")' in script and "__ROOT__" not in script
    assert 'JSON.parse(document.getElementById(root.getAttribute("data-island")).textContent)' in script
    assert "innerHTML" not in script and "eval(" not in script


@pytest.mark.parametrize("bad", ["cbc-XYZ", "x-0123", 'cbc-0"', "cbc-01</script>"])
def test_an_id_that_is_not_ours_is_refused(bad):
    with pytest.raises(ValueError, match="not a section id of ours"):
        flips_script(bad)
