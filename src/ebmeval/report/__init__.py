"""Reports from the run store: tables, plots and paired contrasts. Reports never call a model."""

from ..tables import Table, latex_escape
from ._build import HumanComparison, Prices, Report, RoleUsage, collect, panel_table, recall_curve, role_usage
from ._compare import Contrast, compare, compare_runs, metric_values
from ._human import (
    POOLED,
    SIGN,
    Agreement,
    AgreementReport,
    HumanContrast,
    agreement,
    agreement_report,
    condition_label,
    human_contrast,
)
from ._render import ReportFiles, write_report

__all__ = [
    "POOLED",
    "SIGN",
    "Agreement",
    "AgreementReport",
    "Contrast",
    "HumanComparison",
    "HumanContrast",
    "Prices",
    "Report",
    "ReportFiles",
    "RoleUsage",
    "Table",
    "agreement",
    "agreement_report",
    "collect",
    "condition_label",
    "panel_table",
    "compare",
    "compare_runs",
    "human_contrast",
    "latex_escape",
    "metric_values",
    "recall_curve",
    "role_usage",
    "write_report",
]
