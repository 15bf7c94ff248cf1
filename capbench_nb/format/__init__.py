"""Stage 0: the run format v1 (spec sections 2-5 and 8), stated once, as data.

Every reader, check and generated doc table takes its names, vocabularies and limits from here.
"""

from capbench_nb.format.schema import *  # noqa: F401,F403
from capbench_nb.format.schema import __all__  # noqa: F401
