"""Stage 2: raw run -> attempt records: the manifest, both results.jsonl readers, evidence, derivation
from artifacts, ingest, the recorder and the importers."""
