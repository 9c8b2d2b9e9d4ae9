"""The run store: every run, generation, step, score and error, in SQLite."""

from ._export import ExportFormat, export_rows, export_run
from ._merge import MergeReport, merge_stores
from ._provenance import collect_provenance, git_revision, package_versions
from ._salvage import SalvageReport, TableSalvage, check_store, salvage_store
from ._schema import SCHEMA_VERSION
from ._store import RunLockedError, RunRecord, RunStore, SampleMemo, ScoreSet

__all__ = [
    "ExportFormat",
    "MergeReport",
    "SCHEMA_VERSION",
    "RunLockedError",
    "RunRecord",
    "RunStore",
    "SalvageReport",
    "SampleMemo",
    "ScoreSet",
    "TableSalvage",
    "check_store",
    "collect_provenance",
    "export_rows",
    "export_run",
    "git_revision",
    "merge_stores",
    "package_versions",
    "salvage_store",
]
