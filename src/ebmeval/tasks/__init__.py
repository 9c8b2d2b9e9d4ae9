"""Tasks, samples, workflows and scorers: the types every evaluation is built from."""

from ._context import MemoryMemo, SampleContext, StepMemo, sample_seed
from ._files import parse_jsonl, read_jsonl
from ._identity import model_identity, scorer_label, scorer_spec
from ._sample import Document, ParsedAnswer, RetrievedDocument, Sample
from ._task import (
    THINKING_BUDGET,
    AnswerParser,
    Generation,
    Score,
    Scorer,
    Task,
    Workflow,
    WorkflowResult,
    create_scorer,
    create_task,
    keep_text,
    scorer,
    scorer_registry,
    task,
    task_registry,
)

__all__ = [
    "THINKING_BUDGET",
    "AnswerParser",
    "Document",
    "Generation",
    "MemoryMemo",
    "ParsedAnswer",
    "RetrievedDocument",
    "Sample",
    "SampleContext",
    "Score",
    "Scorer",
    "StepMemo",
    "Task",
    "Workflow",
    "WorkflowResult",
    "create_scorer",
    "create_task",
    "keep_text",
    "parse_jsonl",
    "model_identity",
    "read_jsonl",
    "sample_seed",
    "scorer_label",
    "scorer_spec",
    "scorer",
    "scorer_registry",
    "task",
    "task_registry",
]
