"""Publishing a set of output files into a directory so that a reader sees the old set or the new one.

A build writes its outputs into a *staging folder* (hidden, next to the output directory OUT, or
inside a shared OUT), locked (``flock``) by the build for its lifetime.  Then:

- :func:`switch`: OUT missing, or holding only outputs of this kind: the staging folder takes its
  place in one step (``RENAME_EXCHANGE``, or two renames where that is unsupported);
- :func:`publish_files` / :func:`publish`: any other OUT (the run directory itself, say): file by
  file, each by an atomic rename, rolled back if a rename fails midway;
- :func:`recover`: before a build, what killed builds left behind is cleaned up (nothing a live
  build holds is touched), and outputs a kill left in a ``.previous`` folder are put back
  (:func:`restore`, which every command runs on the run directories it reads);
- :func:`replace_directory`: a whole directory (an imported run) put in the place of another, so
  that the path never goes missing;
- :func:`check_writable`: an output directory the process may not write into is refused before
  any work, not swapped through its parent.

POSIX only (``fcntl`` locks; the exchange on Linux).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from capbench_nb.io.atomic import current_umask, fsync_directory, fsync_file

__all__ = [
    "STAGING_MARK", "INNER_PREFIX", "PARTIAL", "PREVIOUS", "sibling_prefix", "rename_exchange", "inner_staging",
    "unlocked", "lock", "restore", "recover", "dedicated", "switch", "replace_directory", "publish_files", "publish",
    "check_writable",
]

#: Staging folders: beside OUT ``.OUT.capbench-XXXX.partial``, inside a shared OUT
#: ``.capbench-report-XXXX.partial``; the previous outputs while the fallback switch runs: ``.previous``.
STAGING_MARK = ".capbench-"
INNER_PREFIX = ".capbench-report-"
PARTIAL, PREVIOUS = ".partial", ".previous"


def sibling_prefix(out: Path) -> str:
    """Name prefix of the hidden folders a build of ``out`` keeps next to it.

    A name too long to take the prefix and suffix within NAME_MAX (255 bytes) is replaced by a
    digest of itself, so every build of ``out`` still finds the others' folders.
    """
    name = out.name
    if len(os.fsencode(name)) > 150:
        import hashlib

        name = hashlib.sha256(os.fsencode(name)).hexdigest()[:24]
    return f".{name}{STAGING_MARK}"


def rename_exchange(a: Path, b: Path) -> None:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); OSError where unsupported."""
    import ctypes
    import errno

    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None or not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a), None, str(b))


def inner_staging(out: Path) -> Path:
    """A new staging folder inside ``out`` (a shared output directory, or one on its own file system)."""
    return Path(tempfile.mkdtemp(dir=out, prefix=INNER_PREFIX, suffix=PARTIAL))


def unlocked(path: Path) -> bool:
    """True when no live build holds ``path`` (a staging folder, locked by its build for its lifetime)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases the probe's lock


def lock(path: Path, *, wait: bool = True) -> int:
    """Hold ``path`` (a staging folder) until the returned descriptor is closed; a kill releases it too.

    With ``wait=False``, an OSError instead of waiting when another process holds it.
    """
    import fcntl

    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _siblings(out: Path) -> tuple[list[Path], list[Path]]:
    """The hidden folders beside ``out`` that builds and imports of it leave: (``.previous`` ones, staging
    ones); also the two kinds an import wrote before they were named this way (``.OUT.replaced-*``,
    ``.OUT.import-*``)."""
    prefix = sibling_prefix(out)
    legacy_previous, legacy_partial = f".{out.name}.replaced-", f".{out.name}.import-"
    try:
        names = sorted(p.name for p in out.parent.iterdir())
    except OSError:
        return [], []
    previous = [n for n in names if (n.startswith(prefix) and n.endswith(PREVIOUS)) or n.startswith(legacy_previous)]
    partial = [n for n in names if (n.startswith(prefix) and n.endswith(PARTIAL)) or n.startswith(legacy_partial)]
    return [out.parent / n for n in previous], [out.parent / n for n in partial]


def restore(out: Path) -> None:
    """Put back what a kill left moved aside: when ``out`` is missing and a ``.previous`` folder of a
    killed switch (or import) of it waits beside it, unlocked, that folder becomes ``out`` again."""
    if os.path.lexists(out):
        return
    for path in _siblings(out)[0]:
        if os.path.islink(path) or unlocked(path):  # a symlink (an imported --out that was one) holds no lock
            with contextlib.suppress(OSError):
                os.rename(path, out)
                fsync_directory(out.parent)
                return


def recover(out: Path) -> None:
    """Clean up after builds of ``out`` that were killed: nothing a live build uses is touched.

    A killed build leaves its staging folder next to ``out`` (or, for a
    shared output directory, inside it), and a build killed between the two
    renames of the fallback switch leaves ``out`` missing and the previous
    outputs in a ``.previous`` folder: those are put back first (:func:`restore`).
    """
    restore(out)
    candidates = [p for group in _siblings(out) for p in group]
    with contextlib.suppress(OSError):
        candidates += [p for p in out.iterdir() if p.name.startswith(INNER_PREFIX) and p.name.endswith(PARTIAL)]
    for path in candidates:
        if os.path.islink(path):
            with contextlib.suppress(OSError):
                os.unlink(path)
        elif os.path.isdir(path) and unlocked(path):
            shutil.rmtree(path, ignore_errors=True)


def dedicated(out: Path, names: tuple[str, ...]) -> bool:
    """``out`` is a real directory that holds nothing but outputs of this kind of build."""
    if os.path.islink(out) or not out.is_dir():
        return False
    return all(entry in names for entry in os.listdir(out))


def switch(staging: Path, out: Path, names: tuple[str, ...]) -> bool:
    """Make the folder ``staging`` the output directory ``out``, all files at once.

    ``out`` missing: one rename.  ``out`` holding only outputs of this kind:
    one ``RENAME_EXCHANGE`` swaps the two folders, so a reader (or a kill at
    any moment) sees the previous set or the new one.  Where the exchange is
    unsupported, two renames: a kill between them leaves no ``out`` and the
    previous outputs in a ``.previous`` folder, which the next build restores.
    Anything that appeared in ``out`` meanwhile is moved back.  False, with
    nothing changed, when ``out`` cannot be moved at all (a mount point).
    """
    mode = stat.S_IMODE(os.stat(out).st_mode) if out.is_dir() else 0o777 & ~current_umask()
    os.chmod(staging, mode)  # mkdtemp made it 0700; keep the directory's own permissions
    if not os.path.lexists(out):
        os.rename(staging, out)
        fsync_directory(out.parent)
        return True
    try:
        old = replace_directory(staging, out)
    except OSError:  # out cannot move (a mount point, say): nothing changed
        return False
    for entry in os.listdir(old):
        if entry not in names and not os.path.lexists(out / entry):
            with contextlib.suppress(OSError):
                os.rename(old / entry, out / entry)
    shutil.rmtree(old, ignore_errors=True)
    return True


def replace_directory(new: Path, out: Path) -> Path:
    """Put the directory ``new`` (a staging folder beside ``out``) in the place of ``out``, a directory
    or a symlink, so that ``out`` never goes missing; returns where the previous ``out`` now is, for
    the caller to delete.

    One ``RENAME_EXCHANGE``: the previous ``out`` takes ``new``'s name.  Where the exchange is
    unsupported, two renames, the previous ``out`` held (locked) in a ``.previous`` folder between
    them: a kill there leaves ``out`` missing, and :func:`restore` (which the next command on ``out``
    runs) puts it back.  An OSError with nothing changed when ``out`` cannot move (a mount point).
    """
    try:
        rename_exchange(new, out)
        fsync_directory(out.parent)
        return new
    except OSError:
        pass
    previous = new.with_name(new.name.removesuffix(PARTIAL) + PREVIOUS)
    held = None
    if not os.path.islink(out):
        with contextlib.suppress(OSError):
            held = lock(out, wait=False)  # the lock moves with the folder: restore leaves it alone
    try:
        os.rename(out, previous)
        try:
            os.rename(new, out)
        except OSError:
            os.rename(previous, out)
            raise
        fsync_directory(out.parent)
    finally:
        if held is not None:
            os.close(held)
    return previous


def check_writable(out: Path) -> str | None:
    """Why the process may not create files in the existing directory ``out`` (``Permission denied``,
    ``Read-only file system``), or None when it may (or ``out`` is not a directory yet).

    Asked before a build, so that a directory without write permission is refused instead of being
    replaced through its parent (which only needs the parent's permission).  As for every write, a
    process that may override permissions (root, ``CAP_DAC_OVERRIDE``) may write there.
    """
    if not os.path.isdir(out) or os.access(out, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        return None
    with contextlib.suppress(OSError):
        if os.statvfs(out).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    return os.strerror(errno.EACCES)


def publish_files(staging: Path, out: Path, names: tuple[str, ...]) -> None:
    """:func:`publish` from ``staging`` into ``out``, through a staging folder inside ``out`` when a
    rename from ``staging`` cannot reach it: another file system (``out`` a mount point), or another
    mount of the same one (a bind mount, EXDEV though ``st_dev`` is the same)."""
    out.mkdir(exist_ok=True)
    if os.stat(staging).st_dev == os.stat(out).st_dev:
        try:
            publish(staging, out, names)
            return
        except OSError as exc:  # (publish put back what it had replaced)
            if exc.errno != errno.EXDEV:
                raise
    inner = inner_staging(out)
    held = lock(inner)
    try:
        for name in names:
            shutil.copy2(staging / name, inner / name)
            fsync_file(inner / name)
        publish(inner, out, names)
    finally:
        shutil.rmtree(inner, ignore_errors=True)
        os.close(held)


def publish(staging: Path, out: Path, names: tuple[str, ...]) -> None:
    """Move ``names`` from ``staging`` over ``out``, each by an atomic rename (a shared ``out``).

    Used when ``out`` holds other files too (say, the run directory itself),
    which :func:`switch` must not move.  A reader sees, per file, the old
    version or the new one; a kill between two renames can leave a mix (the
    outputs' hashes and ``capbench-nb verify`` show it).  If a rename
    fails midway, the files already replaced get their previous versions back
    (kept as hard links, or copies where links are impossible), so the
    directory never mixes two reports.
    """
    keep = staging / ".previous"
    keep.mkdir()
    kept: list[str] = []
    for name in names:
        target = out / name
        if target.exists():
            try:
                os.link(target, keep / name)
            except OSError:
                shutil.copy2(target, keep / name)
            kept.append(name)
    placed: list[str] = []
    try:
        for name in names:
            os.replace(staging / name, out / name)
            placed.append(name)
    except BaseException:
        for name in placed:
            with contextlib.suppress(OSError):
                if name in kept:
                    os.replace(keep / name, out / name)
                else:
                    os.unlink(out / name)
        raise
    fsync_directory(out)
