"""The campaign store (spec section 14): many runs' attempts as one Apache Parquet dataset.

:mod:`~capbench_nb.records.campaign.schema` states its tables (their Arrow types come from the
format's field tables), :mod:`~capbench_nb.records.campaign.store` writes a store (each export
published in one step) and :mod:`~capbench_nb.records.campaign.reader` reads runs back from it.
"""
