"""Expert annotation: blinded studies of model outputs, served as a small web application.

``create_study`` builds a study from run-store runs or JSONL files and returns the invitation
tokens; ``revoke`` invalidates or rotates one; ``serve`` runs the app; ``export`` and
``import_scores`` take the human scores out, the latter into the run store, where
``agreement_report`` compares them with an automatic judge.
"""

from ..report import AgreementReport, agreement_report
from . import _require  # noqa: F401  (raises MissingDependencyError without the web extra)
from ._access import revoke
from ._answers import FieldAgreement, Rating, agreement, save_answer, study_ratings
from ._design import PlannedTask, latin_square_plan
from ._export import export, import_scores, serve
from ._forms import DEFAULT_CHECKLIST, FORMS, RUBRIC_ANCHORS, Form, FormField, build_form
from ._models import database_url, make_engine
from ._study import (
    StudyInvitations,
    create_study,
    items_from_file,
    items_from_runs,
    judged_rubric,
    read_calibration,
)

__all__ = [
    "DEFAULT_CHECKLIST",
    "FORMS",
    "RUBRIC_ANCHORS",
    "AgreementReport",
    "FieldAgreement",
    "Form",
    "FormField",
    "PlannedTask",
    "Rating",
    "StudyInvitations",
    "agreement",
    "agreement_report",
    "build_form",
    "create_study",
    "judged_rubric",
    "database_url",
    "export",
    "import_scores",
    "items_from_file",
    "items_from_runs",
    "latin_square_plan",
    "make_engine",
    "read_calibration",
    "revoke",
    "save_answer",
    "serve",
    "study_ratings",
]
