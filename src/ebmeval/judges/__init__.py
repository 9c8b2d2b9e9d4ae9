"""The judges: the core every model-graded scorer is built on, and the built-in judges.

The core:

- :func:`ask`: one question to the ``judge`` role, one stricter follow-up when the reply cannot
  be read, the raw replies kept (:class:`Attempt`);
- :func:`read_verdict`: the one yes/no vocabulary (``YES_WORDS``, ``NO_WORDS``), and
  :func:`leading_verdict` for a verdict stated by a reply's first words;
- :func:`json_in_text`: the one reader of JSON inside a reply (nested, fenced); :func:`json_values`
  lists every value with its place, as answer extraction reads them; the readers built on them:
  :func:`parse_verdict`, :func:`parse_verdicts`, :func:`parse_counts`, :func:`parse_score`,
  :func:`parse_field`;
- :func:`clean`: a reply without thinking traces and Markdown emphasis;
- :func:`panel_agreement`: Krippendorff's α and ICC among the judges of a panel.

The built-in judges, one module each: the 0–5 rubric (``judge/rubric-0-5``), the rubric panel
(``judge/rubric-panel``), the reasoning-step judges (``judge/steps-*``), the categorical
factuality judge (``judge/factuality``, with its label schema), the pairwise judge of the arena and
the reference judge of free-text answers (``judge/reference-0-5``).
Their prompt templates are in the one registry, :data:`ebmeval.prompts.templates`.

Judges take their models only from roles of the sample context, and declare their prompt
templates, settings and roles, which the scorer spec (``ebmeval.tasks.scorer_spec``) records.
"""

from ._ask import Attempt, ask
from ._factuality import (
    ClaimLabel,
    FactualityJudge,
    FactualityVerdict,
    Scheme,
    closest_statement,
    factuality_judge,
    jaccard,
    label_claim,
    parse_reply,
)
from ._factuality_labels import (
    BINARY_CATEGORIES,
    DERIVED_CATEGORIES,
    DIRECTIONS,
    LABEL_CATEGORIES,
    MODALITIES,
    Direction,
    FactualityLabels,
    Modality,
    direction_agrees,
    direction_applies,
    normalize_direction,
    normalize_modality,
)
from ._pairwise import AXES, PAIRWISE, STRICT, PairwiseVerdict, parse_pairwise, render_pairwise, verdict_form
from ._panel import PanelAgreement, panel_agreement, panel_score_sets
from ._read import (
    NO_WORDS,
    YES_WORDS,
    clean,
    json_in_text,
    json_literal,
    json_values,
    leading_verdict,
    parse_counts,
    parse_field,
    parse_score,
    parse_verdict,
    parse_verdicts,
    read_verdict,
)
from ._reference import REFERENCE_JUDGE, REFERENCE_RETRY, ReferenceJudge, reference_judge
from ._rubric import CRITERIA, RUBRIC_MAX_TOKENS, RubricGrade, RubricJudge, RubricPrompts, rubric_grade
from ._rubric_panel import RubricPanel
from ._steps import (
    LIST_MAX_TOKENS,
    STEP_MAX_TOKENS,
    StepsWithoutReference,
    StepsWithReference,
    StepsWithReferenceSingle,
    expert_steps,
    numbered,
    rationale_of,
    steps_with_reference,
    steps_with_reference_single,
    steps_without_reference,
)

__all__ = [
    "AXES",
    "BINARY_CATEGORIES",
    "CRITERIA",
    "DERIVED_CATEGORIES",
    "DIRECTIONS",
    "LABEL_CATEGORIES",
    "LIST_MAX_TOKENS",
    "MODALITIES",
    "NO_WORDS",
    "PAIRWISE",
    "RUBRIC_MAX_TOKENS",
    "STEP_MAX_TOKENS",
    "STRICT",
    "YES_WORDS",
    "Attempt",
    "ClaimLabel",
    "Direction",
    "FactualityJudge",
    "FactualityLabels",
    "FactualityVerdict",
    "Modality",
    "PairwiseVerdict",
    "PanelAgreement",
    "REFERENCE_JUDGE",
    "REFERENCE_RETRY",
    "ReferenceJudge",
    "RubricGrade",
    "RubricJudge",
    "RubricPanel",
    "RubricPrompts",
    "Scheme",
    "StepsWithReference",
    "StepsWithReferenceSingle",
    "StepsWithoutReference",
    "ask",
    "clean",
    "closest_statement",
    "direction_agrees",
    "direction_applies",
    "expert_steps",
    "factuality_judge",
    "jaccard",
    "json_in_text",
    "json_literal",
    "json_values",
    "label_claim",
    "leading_verdict",
    "normalize_direction",
    "normalize_modality",
    "numbered",
    "panel_agreement",
    "panel_score_sets",
    "parse_counts",
    "parse_field",
    "parse_pairwise",
    "parse_reply",
    "parse_score",
    "parse_verdict",
    "parse_verdicts",
    "rationale_of",
    "read_verdict",
    "reference_judge",
    "render_pairwise",
    "rubric_grade",
    "steps_with_reference",
    "steps_with_reference_single",
    "steps_without_reference",
    "verdict_form",
]
