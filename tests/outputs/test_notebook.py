"""capbench_nb.outputs.notebook: kernels talk over Unix sockets in a folder of their own (no TCP port race),
and a kernel's start is tried again when it died before answering."""

from __future__ import annotations

import os

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



def test_kernels_use_unix_sockets_in_their_own_folder(tmp_path, monkeypatch):
    seen = []
    execute, _ = _fake([])

    def recording(*args, **kwargs):
        seen.append(kwargs["config"])
        return execute(*args, **kwargs)

    monkeypatch.setattr(papermill, "execute_notebook", recording)
    notebook.execute_notebook(tmp_path / "nb.ipynb", {}, cwd=tmp_path, progress=False)
    [config] = seen
    assert config.KernelManager.transport == "ipc"
    folder = os.path.dirname(config.KernelManager.ip)
    assert os.path.basename(folder).startswith("capbench-nb-ipc-") and not os.path.exists(folder)  # removed after
    assert not str(config.KernelManager.ip).startswith(str(tmp_path))  # never in the staging folder (cwd)
    long = tmp_path / ("d" * 120)
    long.mkdir()
    monkeypatch.setattr(notebook.tempfile, "tempdir", str(long))  # a socket path would not fit: TCP
    notebook.execute_notebook(tmp_path / "nb.ipynb", {}, cwd=tmp_path, progress=False)
    assert "transport" not in seen[-1].KernelManager
