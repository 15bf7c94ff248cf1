"""Executing a notebook with papermill on a kernel of this Python, in a way an interrupt can stop.

:func:`own_kernel` gives a kernel name that starts ``sys.executable``;
:func:`execute_notebook` runs a notebook on it in memory (nothing written) in a
worker thread, so that SIGINT and SIGTERM reach the caller, which kills the
kernel before the interrupt goes on.  ``capbench-nb report`` and ``compare``
(:mod:`capbench_nb.outputs.build`) build on it, as may any command that runs
a notebook.  papermill is imported when a notebook runs, not when the package is.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from capbench_nb.io import interrupts

__all__ = ["own_kernel", "execute_notebook", "INJECTED_TAG"]

#: The tag of the cell papermill adds with the parameters (its random id is replaced by this tag).
INJECTED_TAG = "injected-parameters"


# --------------------------------------------------------------------------- the kernel


@contextlib.contextmanager
def own_kernel() -> Iterator[str]:
    """A kernel name that starts this very Python (``sys.executable``), valid inside the block.

    A kernelspec is written into a temporary directory that is put first on
    ``JUPYTER_PATH`` for the duration of the block (jupyter_client reads the
    variable whenever a kernel is looked up), so the report never runs on
    whatever kernel a user-wide ``python3`` spec happens to point at.  The
    name is unique, so no other kernelspec can shadow it.  The kernel's
    matplotlib backend is the inline one even when ``MPLBACKEND`` is set
    (say, to Agg for scripts), or pyplot figures would be missing from the
    report; its log is kept to critical messages, so a report is quiet.
    """
    name = f"capbench-nb-{os.getpid()}-{secrets.token_hex(4)}"
    try:  # what `ipykernel install` would write for this Python (metadata such as supported encryption)
        from ipykernel.kernelspec import get_kernel_dict

        spec = dict(get_kernel_dict())
    except Exception:  # pragma: no cover - an ipykernel without that helper
        spec = {"language": "python", "metadata": {}}
    # The kernel's own log goes to our stderr; at shutdown jupyter_client interrupts the kernel
    # first, which now and then logs "KeyboardInterrupt caught in kernel" there.  Errors in cells
    # reach us through the notebook, and a kernel that dies is reported as such.
    spec["argv"] = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                    "--IPKernelApp.log_level=CRITICAL", "--HistoryManager.enabled=False"]
    spec["display_name"] = f"capbench-nb ({sys.executable})"
    spec["env"] = {"MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    with tempfile.TemporaryDirectory(prefix="capbench-nb-kernel-") as tmp:
        spec_dir = Path(tmp, "kernels", name)
        spec_dir.mkdir(parents=True)
        (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        previous = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = tmp if not previous else tmp + os.pathsep + previous
        try:
            yield name
        finally:
            if previous is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = previous


# --------------------------------------------------------------------------- execution


def execute_notebook(notebook: Path, parameters: dict, *, cwd: Path, progress: bool) -> Any:
    """Run ``notebook`` with papermill on :func:`own_kernel`; returns the executed notebook node.

    papermill writes nothing: the executed notebook stays in memory (no output
    path, so none is formatted with the parameters either) and the caller
    writes it once.  Saving after every cell, papermill's default, rewrote the
    whole notebook with its images some fifty times per report.  Should the
    kernel die, the exception raised carries the notebook as far as it ran
    (``exc.capbench_notebook``), which names the cell that was running.

    papermill runs in a worker thread while the calling thread waits, so signals
    reach the caller's handlers (nbclient installs its own, which shut the kernel
    down and end in a DeadKernelError, only on the main thread).  When the wait
    is interrupted (KeyboardInterrupt, :class:`~capbench_nb.io.interrupts.Terminated`),
    the kernel's process group is killed and the worker joined before the
    interrupt goes on: no kernel outlives the call, and none is left running in
    ``cwd`` when the caller removes it.
    """
    import papermill

    # papermill's own log (e.g. "Kernel died while waiting for execute reply") would repeat, on
    # stderr and unasked, what the ReportError raised from it says in one line.
    log = logging.getLogger("papermill")
    level = log.level
    log.setLevel(logging.CRITICAL)
    kernels = _Kernels()
    outcome: dict[str, Any] = {}

    def work(kernel_name: str) -> None:
        try:
            outcome["nb"] = papermill.execute_notebook(
                str(notebook),
                None,
                parameters=parameters,  # papermill writes them as literals into a cell of its own
                engine_name=_engine_name(),
                kernel_name=kernel_name,
                language="python",
                progress_bar=progress,
                request_save_on_cell_execute=False,
                log_output=False,
                cwd=str(cwd),
                config=_client_config(kernels, ipc),
            )
        except BaseException as exc:  # handed to the waiting thread
            outcome["error"] = exc
        finally:
            _close_thread_loop()

    try:
        with own_kernel() as kernel_name, tempfile.TemporaryDirectory(prefix="capbench-nb-ipc-") as sockets:
            ipc = os.path.join(sockets, "kernel")
            if len(ipc) + 8 > _MAX_SOCKET_PATH:  # a very long TMPDIR: TCP after all (a socket path is short)
                ipc = None
            for _ in range(KERNEL_STARTS):
                outcome.clear()
                worker = threading.Thread(target=work, args=(kernel_name,), name="capbench-nb-notebook", daemon=True)
                worker.start()
                try:
                    worker.join()
                except BaseException:
                    kernels.stop(worker)
                    raise
                if not _died_at_start(outcome.get("error")):
                    break
    finally:
        log.setLevel(level)
    if "error" in outcome:
        raise outcome["error"]
    nb = outcome["nb"]
    for cell in nb.cells:  # papermill gives its cell a random id, which would differ between two reports
        if INJECTED_TAG in cell.get("metadata", {}).get("tags", []):
            cell["id"] = INJECTED_TAG
    return nb


#: The longest path of a Unix socket (sun_path is 108 bytes on Linux, 104 on macOS; a terminating NUL).
_MAX_SOCKET_PATH = 100

#: Kernel starts tried per notebook.  On TCP (the fallback when the socket folder's path is too long)
#: jupyter_client chooses a kernel's ports before the kernel binds them, and another process starting a kernel
#: at that moment can take one: the kernel dies with "Address already in use" before its first reply, when no
#: cell has run, and a new start takes new ports.
KERNEL_STARTS = 3


def _died_at_start(error: BaseException | None) -> bool:
    """Whether ``error`` is nbclient's for a kernel that died before it answered (nothing executed)."""
    return isinstance(error, RuntimeError) and "Kernel died before replying to kernel_info" in str(error)


def _close_thread_loop() -> None:
    """Close the event loop jupyter_client made for this (worker) thread: it dies with the thread."""
    import asyncio

    with contextlib.suppress(Exception):
        loop = asyncio.get_event_loop_policy().get_event_loop()
        if not loop.is_running():
            loop.close()


class _Kernels:
    """The kernels one execution starts (nbclient creates their managers from :meth:`manager_class`),
    so that another thread can kill them."""

    def __init__(self) -> None:
        self.managers: list[Any] = []

    def manager_class(self) -> type:
        from jupyter_client.manager import AsyncKernelManager

        managers = self.managers

        class WatchedKernelManager(AsyncKernelManager):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs)
                managers.append(self)

        return WatchedKernelManager

    def kill(self) -> None:
        """SIGKILL to every kernel started so far, and its process group (jupyter_client starts each
        kernel in a session of its own; never our own group)."""
        import signal

        for manager in list(self.managers):
            provisioner = getattr(manager, "provisioner", None)
            pid = getattr(provisioner, "pid", None)
            if not pid:
                continue
            group = getattr(provisioner, "pgid", None)
            with contextlib.suppress(OSError):
                if group and group != os.getpgrp():
                    os.killpg(group, signal.SIGKILL)
                else:
                    os.kill(pid, signal.SIGKILL)

    def stop(self, worker: threading.Thread, timeout: float = 10.0) -> None:
        """Kill the kernels until ``worker`` (running the notebook) ends, at most ``timeout`` seconds:
        a kernel still starting when the interrupt came is killed as soon as it has a process."""
        deadline = time.monotonic() + timeout
        while worker.is_alive() and time.monotonic() < deadline:
            self.kill()
            worker.join(0.05)
        self.kill()


_ENGINE = "capbench-nb"


def _engine_name() -> str:
    """The papermill engine of reports (registered on first use): nbclient's, keeping the notebook on failure."""
    from papermill.engines import NBClientEngine, papermill_engines

    if _ENGINE not in papermill_engines._engines:

        class InMemoryEngine(NBClientEngine):
            @classmethod
            def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
                try:
                    return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)
                except BaseException as exc:
                    with contextlib.suppress(AttributeError, TypeError):
                        exc.capbench_notebook = nb_man.nb
                    raise

        papermill_engines.register(_ENGINE, InMemoryEngine)
    return _ENGINE


def _client_config(kernels: _Kernels | None = None, ipc: str | None = None) -> Any:
    """nbclient configuration: encrypt the kernel's local TCP traffic where both ends can; kernels
    started through ``kernels`` (which can kill them); the ``kernel`` pause point of
    :mod:`~capbench_nb.io.interrupts` before each cell, when a test asks for it.

    Recent ipykernels declare CurveZMQ support in their kernelspec and warn on
    stderr when started on plain TCP; jupyter_client provisions keys only when
    asked (``transport_encryption``, absent from older versions).
    """
    from jupyter_client.manager import KernelManager
    from traitlets.config import Config

    config = Config()
    try:
        import zmq

        curve = bool(zmq.has("curve"))
    except Exception:  # pragma: no cover
        curve = False
    if curve and KernelManager.class_traits().get("transport_encryption") is not None:
        config.KernelManager.transport_encryption = "auto"
    # The notebook has written (and fsynced) every output by its last cell; a graceful shutdown
    # would only wait ~0.4 s for the interpreter to tear down pandas and matplotlib.
    config.NotebookClient.shutdown_kernel = "immediate"
    if ipc is not None:
        # Unix sockets in a folder of our own instead of TCP ports: jupyter_client picks TCP ports before the
        # kernel binds them, and a kernel starting at the same moment elsewhere can take one ("Address already
        # in use", in the kernel's start or its heartbeat thread).  Socket files cannot collide.
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = ipc
    if kernels is not None:
        config.NotebookClient.kernel_manager_class = kernels.manager_class()
    if interrupts.pausing("kernel"):
        config.NotebookClient.on_cell_execute = lambda **_: interrupts.pause_point("kernel")
    return config
