"""A three-question multiple-choice task."""

from __future__ import annotations

from ebmeval import Sample, Task, create_scorer, task
from ebmeval.scorers import accuracy, choice_parser
from ebmeval.workflows import Strategy, qa_workflow

QUESTIONS = [
    ("q1", "Which design best answers a question about a treatment's effect?", "A"),
    ("q2", "Which study type pools the results of several trials?", "B"),
    ("q3", "What does a 95% confidence interval that excludes 1 for a risk ratio suggest?", "C"),
]
CHOICES = {"A": "Randomised controlled trial", "B": "Meta-analysis", "C": "A significant effect"}


@task("example/evidence-quiz")
def evidence_quiz(strategy: Strategy = "direct") -> Task:
    """Three evidence-based-medicine questions (an example plugin task)."""
    samples = [Sample(id=i, input=q, target=t, choices=CHOICES) for i, q, t in QUESTIONS]
    return Task(
        name="example/evidence-quiz",
        dataset=samples,
        workflow=qa_workflow(strategy),
        scorers=[accuracy(), create_scorer("example/reply-length")],
        parser=choice_parser(),
    )
