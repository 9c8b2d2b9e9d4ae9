"""``ebmeval view``: a local, read-only web app over a run store (needs the ``web`` extra).

Runs with their options and metrics, a run's samples with filters, one sample with its prompts,
every step, the reading of its answer and every score set, and two runs side by side.
"""

from ._data import KINDS, PAIR_KINDS, SampleFilter, SampleRow, pair_rows, sample_detail, sample_rows, select
from ._serve import serve, view_url

__all__ = [
    "KINDS",
    "PAIR_KINDS",
    "SampleFilter",
    "SampleRow",
    "pair_rows",
    "sample_detail",
    "sample_rows",
    "select",
    "serve",
    "view_url",
]
