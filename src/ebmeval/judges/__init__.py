"""The judge core every model-graded scorer is built on.

- :func:`ask`: one question to the ``judge`` role, one stricter follow-up when the reply cannot
  be read, the raw replies kept (:class:`Attempt`);
- :func:`read_verdict`: the one yes/no vocabulary (``YES_WORDS``, ``NO_WORDS``), and
  :func:`leading_verdict` for a verdict stated by a reply's first words;
- :func:`json_in_text`: the one reader of JSON inside a reply (nested, fenced);
- :func:`clean`: a reply without thinking traces and Markdown emphasis;
- :func:`panel_agreement`: Krippendorff's α and ICC among the judges of a panel.

Judges take their models only from roles of the sample context, and declare their prompt
templates, settings and roles, which the scorer spec (``ebmeval.tasks.scorer_spec``) records.
"""

from ._ask import Attempt, ask
from ._panel import PanelAgreement, panel_agreement, panel_score_sets
from ._read import NO_WORDS, YES_WORDS, clean, json_in_text, leading_verdict, read_verdict

__all__ = [
    "NO_WORDS",
    "YES_WORDS",
    "Attempt",
    "PanelAgreement",
    "ask",
    "clean",
    "json_in_text",
    "leading_verdict",
    "panel_agreement",
    "panel_score_sets",
    "read_verdict",
]
