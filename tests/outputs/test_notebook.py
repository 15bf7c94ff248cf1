"""capbench_nb.outputs.notebook: the kernel's start is tried again when it died before answering."""

from __future__ import annotations

import papermill
import pytest

from capbench_nb.outputs import notebook


class _Node(dict):
    cells: list = []


def _fake(failures: list[BaseException]):
    calls = []

    def execute(*args, **kwargs):
        calls.append(kwargs["cwd"])
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return _Node()

    return execute, calls


def test_a_kernel_that_died_before_its_first_reply_is_started_again(tmp_path, monkeypatch):
    """jupyter_client's port race (another process took a port in between): the start is tried again."""
    died = RuntimeError("Kernel died before replying to kernel_info")
    execute, calls = _fake([died, died])
    monkeypatch.setattr(papermill, "execute_notebook", execute)
    assert isinstance(notebook.execute_notebook(tmp_path / "nb.ipynb", {}, cwd=tmp_path, progress=False), _Node)
    assert len(calls) == 3 == notebook.KERNEL_STARTS


def test_starts_are_tried_at_most_kernel_starts_times(tmp_path, monkeypatch):
    died = RuntimeError("Kernel died before replying to kernel_info")
    execute, calls = _fake([died] * notebook.KERNEL_STARTS)
    monkeypatch.setattr(papermill, "execute_notebook", execute)
    with pytest.raises(RuntimeError, match="kernel_info"):
        notebook.execute_notebook(tmp_path / "nb.ipynb", {}, cwd=tmp_path, progress=False)
    assert len(calls) == notebook.KERNEL_STARTS


@pytest.mark.parametrize("error", [RuntimeError("something else"), ValueError("Kernel died before replying to kernel_info")])
def test_any_other_failure_is_not_tried_again(tmp_path, monkeypatch, error):
    execute, calls = _fake([error])
    monkeypatch.setattr(papermill, "execute_notebook", execute)
    with pytest.raises(type(error)):
        notebook.execute_notebook(tmp_path / "nb.ipynb", {}, cwd=tmp_path, progress=False)
    assert len(calls) == 1

