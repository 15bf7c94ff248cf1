"""Stage 0: the run format v1 (spec sections 2-5 and 8), stated once, as data.

Every reader, check and generated doc table takes its names, vocabularies and limits from here:
:mod:`~capbench_nb.format.vocabulary`, :mod:`~capbench_nb.format.limits`,
:mod:`~capbench_nb.format.telemetry`, :mod:`~capbench_nb.format.artifact_files`, :mod:`~capbench_nb.format.fields`,
:mod:`~capbench_nb.format.record` (:func:`new_record`, the one builder of a record dict),
:mod:`~capbench_nb.format.rules` and :mod:`~capbench_nb.format.lock` (the frozen suite's lock, section 12);
:mod:`~capbench_nb.format.reference` renders them as
``docs/format-reference.md``.
"""

from capbench_nb.format.artifact_files import *  # noqa: F401,F403
from capbench_nb.format.artifact_files import __all__ as _artifact_files
from capbench_nb.format.fields import *  # noqa: F401,F403
from capbench_nb.format.fields import __all__ as _fields
from capbench_nb.format.limits import *  # noqa: F401,F403
from capbench_nb.format.lock import *  # noqa: F401,F403
from capbench_nb.format.lock import __all__ as _lock
from capbench_nb.format.limits import __all__ as _limits
from capbench_nb.format.record import *  # noqa: F401,F403
from capbench_nb.format.record import __all__ as _record
from capbench_nb.format.rules import *  # noqa: F401,F403
from capbench_nb.format.rules import __all__ as _rules
from capbench_nb.format.telemetry import *  # noqa: F401,F403
from capbench_nb.format.telemetry import __all__ as _telemetry
from capbench_nb.format.vocabulary import *  # noqa: F401,F403
from capbench_nb.format.vocabulary import __all__ as _vocabulary

__all__ = [*_vocabulary, *_limits, *_telemetry, *_artifact_files, *_fields, *_record, *_rules, *_lock]
