"""Reports from the run store: tables, plots and paired contrasts. Reports never call a model."""

from ..tables import Table, latex_escape
from ._build import HumanComparison, Prices, Report, collect, panel_table, recall_curve
from ._compare import Contrast, compare, compare_runs, metric_values
from ._human import AgreementReport, agreement_report
from ._render import ReportFiles, write_report

__all__ = [
    "AgreementReport",
    "Contrast",
    "HumanComparison",
    "Prices",
    "Report",
    "ReportFiles",
    "Table",
    "agreement_report",
    "collect",
    "panel_table",
    "compare",
    "compare_runs",
    "latex_escape",
    "metric_values",
    "recall_curve",
    "write_report",
]
