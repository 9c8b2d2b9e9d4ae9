"""Meta-analysis conclusion synthesis: items, workflows, negated evidence, rubric judges and tables.

Typical use::

    from ebmeval.runner import RunConfig, run

    run(RunConfig(task="synthesis", task_args={"source": "m3", "workflow": "golden-rag"}))

The workflows are ``parametric-zero-shot``, ``parametric-cot``, ``standard-rag``,
``golden-rag``, ``negated-rag`` and ``feasibility`` (see :mod:`ebmeval.synthesis._workflows`);
their prompts are registered as ``synthesis/*`` templates. Guide: ``docs/synthesis.md``.
"""

from ..judges import CRITERIA, RubricGrade, RubricJudge, RubricPanel, parse_score, rubric_grade
from ._evidence import (
    OverflowPolicy,
    fit_evidence,
    format_evidence,
    parse_questions,
    truncate_evenly,
    water_fill,
)
from ._items import (
    JoinReport,
    Study,
    SynthesisItem,
    load_jsonl,
    load_m3,
    load_medmeta,
    load_ms2,
    to_sample,
    write_jsonl,
)
from ._negation import (
    Negation,
    NegationStore,
    default_negation_path,
    export_negations,
    negate_documents,
    read_negations,
)
from ._prompts import (
    EBMEVAL,
    MEDMETA_PAPER,
    PROMPT_SETS,
    PromptSet,
    prompt_set,
    prompt_set_of_template,
    prompt_versions,
)
from ._scorers import FeasibilityScore, RetrievalRecall
from ._tables import (
    METRICS,
    Contrast,
    TableRow,
    export_feasibility,
    read_feasibility,
    synthesis_contrasts,
    synthesis_table,
)
from ._workflows import (
    DEFAULT_K,
    EVIDENCE_WORKFLOWS,
    FEASIBILITY_ABOVE,
    FEASIBILITY_TEMPERATURE,
    PAPER_QUESTIONS,
    WORKFLOWS,
    Feasibility,
    GoldenRAG,
    IndexRAG,
    NegatedRAG,
    ParametricCoT,
    ParametricZeroShot,
    StandardRAG,
    WorkflowName,
    gold_studies,
    synthesise,
)

__all__ = [
    "EBMEVAL",
    "MEDMETA_PAPER",
    "PROMPT_SETS",
    "PromptSet",
    "prompt_set",
    "prompt_set_of_template",
    "CRITERIA",
    "Contrast",
    "DEFAULT_K",
    "EVIDENCE_WORKFLOWS",
    "FEASIBILITY_ABOVE",
    "FEASIBILITY_TEMPERATURE",
    "PAPER_QUESTIONS",
    "Feasibility",
    "FeasibilityScore",
    "GoldenRAG",
    "IndexRAG",
    "JoinReport",
    "METRICS",
    "Negation",
    "NegatedRAG",
    "NegationStore",
    "OverflowPolicy",
    "ParametricCoT",
    "ParametricZeroShot",
    "RetrievalRecall",
    "RubricGrade",
    "RubricJudge",
    "RubricPanel",
    "StandardRAG",
    "Study",
    "SynthesisItem",
    "TableRow",
    "WORKFLOWS",
    "WorkflowName",
    "default_negation_path",
    "export_feasibility",
    "export_negations",
    "fit_evidence",
    "format_evidence",
    "load_jsonl",
    "load_m3",
    "load_medmeta",
    "load_ms2",
    "negate_documents",
    "parse_questions",
    "parse_score",
    "prompt_versions",
    "read_feasibility",
    "read_negations",
    "rubric_grade",
    "synthesis_contrasts",
    "synthesis_table",
    "gold_studies",
    "synthesise",
    "to_sample",
    "truncate_evenly",
    "water_fill",
    "write_jsonl",
]
