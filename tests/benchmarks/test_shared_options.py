"""The options the built-in tasks share: declared, described and passed on in one place."""

from __future__ import annotations

import importlib
import inspect
import typing
from typing import Any

import pytest

from ebmeval import create_task
from ebmeval._util.options import option_docs, plain, signature_options
from ebmeval.builtin_tasks._mcq import MCQ_OPTIONS, MCQData, mcq_factory, mcq_task
from ebmeval.builtin_tasks._options import OPTION_DOCS, document_options
from ebmeval.builtin_tasks.pubmedqa import pubmedqa
from ebmeval.tasks import Sample, task_registry
from ebmeval.workflows import Strategy

BUILT_IN = [name for name in task_registry if task_registry.get(name).__module__.startswith("ebmeval.builtin_tasks.")]
"""Every built-in task (installed plugins' tasks left out)."""


@pytest.mark.parametrize("name", BUILT_IN)
def test_describe_documents_every_option_in_signature_order(name: str) -> None:
    """Before, for the factuality tasks: ``side``, ``order_seed`` and ``judge_max_tokens`` had no description."""
    factory = task_registry.get(name)
    docs = option_docs(factory)
    assert list(docs) == list(signature_options(factory))
    assert all(docs.values())


def test_a_shared_option_has_its_one_description_unless_the_task_words_its_own() -> None:
    for name in ("pubmedqa", "mirage/medqa", "lfqa/liveqa"):
        docs = option_docs(task_registry.get(name))
        for option in set(docs) & set(OPTION_DOCS):
            assert docs[option] == plain(OPTION_DOCS[option].replace("\n", " ")), (name, option)
    caremedeval = option_docs(task_registry.get("caremedeval"))
    assert caremedeval["unparsed"].startswith("zero grades an unparsed reply as the empty answer")
    assert caremedeval["answer_format"].endswith("the lenient reading is scored beside it).")


def test_every_passed_on_option_is_an_option_of_mcq_task_with_a_description() -> None:
    parameters = inspect.signature(mcq_task).parameters
    assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in MCQ_OPTIONS)
    assert set(MCQ_OPTIONS) <= set(OPTION_DOCS)


SIGNATURES = {
    "pubmedqa": "setting strategy=direct thinking system_prompt answer_from unparsed answer_format",
    "medthink": "layout strategy=cot thinking system_prompt unparsed answer_format",
    "relation-mcq": "negatives strategy=direct thinking system_prompt unparsed answer_format",
    "caremedeval": "language subset context strategy=direct thinking system_prompt overflow unparsed answer_format "
    "prompt_set",
    "mirage/medqa": "strategy=direct thinking system_prompt answer_from unparsed answer_format",
}
"""The options each multiple-choice task has always taken, in order (with the task's default strategy)."""


@pytest.mark.parametrize("name", SIGNATURES)
def test_an_mcq_factory_offers_its_own_and_the_named_shared_options_in_order(name: str) -> None:
    options = signature_options(task_registry.get(name))
    shown = [f"{key}={p.default}" if key == "strategy" else key for key, p in options.items()]
    assert shown == SIGNATURES[name].split()
    hints, declared = typing.get_type_hints(mcq_task), inspect.signature(mcq_task).parameters
    for key in set(options) & set(MCQ_OPTIONS):
        assert options[key].annotation == hints[key], key
        assert options[key].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert key == "strategy" or options[key].default == declared[key].default


def _build(size: int = 2, prompt_set: str = "default") -> MCQData:
    """Summary.

    Args:
        size: how many.
        prompt_set: which wording.
    """
    samples = [Sample(id=str(i), input="q", target="A", choices={"A": "a", "B": "b"}) for i in range(size)]
    return MCQData("toy", samples, {"prompt_set": prompt_set})


def test_mcq_factory_splits_a_call_between_build_and_the_shared_options() -> None:
    factory = mcq_factory("strategy", "unparsed", "prompt_set", strategy="cot")(_build)
    assert list(inspect.signature(factory).parameters) == ["size", "strategy", "unparsed", "prompt_set"]
    built = factory(3, "cot-refine", prompt_set="paper")
    assert (len(built.dataset), built.workflow.name, built.metadata["prompt_set"]) == (3, "cot-refine", "paper")
    defaulted = factory()
    scorer: Any = defaulted.scorers[0]
    assert (defaulted.workflow.name, scorer.unparsed, len(defaulted.dataset)) == ("cot", "zero", 2)
    doc = inspect.getdoc(factory) or ""
    assert doc.endswith(
        "size: how many.\n    strategy: prompting strategy: ``direct``, ``cot`` or ``cot-refine``.\n"
        "    unparsed: ``zero`` counts an unparsed reply as wrong; ``skip`` leaves it out of the mean.\n"
        "    prompt_set: which wording."
    )
    with pytest.raises(TypeError, match=r"^_build\(\) got an unexpected keyword argument 'answer_from'"):
        factory(answer_from="text")  # a shared option it does not offer


@pytest.mark.parametrize(
    ("options", "defaults", "error"),
    [
        (("strategy", "bogus"), {}, "'bogus' is neither a shared option nor a parameter of its own"),
        (("thinking",), {"strategy": "cot"}, "'strategy' is not a shared option it offers, so it takes no default"),
        (("size",), {"size": 3}, "'size' is not a shared option it offers, so it takes no default"),
        (
            ("strategy",),
            {"strategy": "cott"},
            r"a bad default \(field 'strategy': expected 'direct' \| 'cot' \| 'cot-refine', got 'cott'\)",
        ),
        (("unparsed",), {"unparsed": 0}, r"a bad default \(field 'unparsed': expected .*, got 0\)"),
    ],
)
def test_mcq_factory_refuses_an_option_it_cannot_declare(
    options: tuple[str, ...], defaults: dict[str, Any], error: str
) -> None:
    with pytest.raises(ValueError, match=f"^_build: {error}$"):
        mcq_factory(*options, **defaults)(_build)


def test_mcq_factory_refuses_a_build_declaring_a_shared_option_itself() -> None:
    def build(strategy: Strategy = "direct") -> MCQData:
        return _build()

    with pytest.raises(ValueError, match="'strategy' is a shared option; name it in @mcq_factory instead"):
        mcq_factory("thinking")(build)


def test_each_option_given_or_defaulted_reaches_the_workflow_and_scorer() -> None:
    given = create_task(
        "pubmedqa", strategy="direct", answer_from="logprobs", thinking=True, system_prompt="Be brief.", unparsed="skip"
    )
    workflow: Any = given.workflow
    assert (workflow.name, workflow.answer_from, workflow.thinking) == ("direct", "logprobs", True)
    scorer: Any = given.scorers[0]
    assert workflow.system_prompt == "Be brief." and scorer.unparsed == "skip"
    assert create_task("medthink").workflow.name == "cot"  # the factory's default, not mcq_task's
    strict: Any = create_task("caremedeval", context="none", overflow="error", answer_format="strict").workflow
    assert (strict.overflow, strict.strict, strict.multi_answer) == ("error", True, True)


def test_a_factory_called_directly_takes_its_options_by_position_too() -> None:
    built = pubmedqa("question-only", "cot")
    assert built.workflow.name == "cot" and all(not s.documents for s in built.dataset)
    assert built.metadata["setting"] == "question-only" and built.metadata["size"] == 500
    assert inspect.signature(pubmedqa).return_annotation == "Task"


@pytest.mark.parametrize("name", ["pubmedqa", "lfqa/medicationqa", "lfqa/healthsearchqa"])
def test_a_built_in_factory_keeps_its_module_name_and_names_itself_in_errors(name: str) -> None:
    factory = task_registry.get(name)
    module = importlib.import_module(factory.__module__)
    assert getattr(module, factory.__qualname__, None) is factory
    with pytest.raises(TypeError, match=rf"^{factory.__qualname__}\(\) got an unexpected keyword argument 'bogus'"):
        factory(bogus=1)


def test_document_options_writes_the_shared_entries_in_parameter_order() -> None:
    def factory(strategy: Strategy = "direct", size: int = 1, max_tokens: int = 9) -> None:
        """Summary.

        Args:
            size: how many,
                at most.
        """

    doc = inspect.getdoc(document_options(factory)) or ""
    assert doc.startswith("Summary.\n\nArgs:\n    strategy: prompting strategy:")
    assert "    size: how many,\n        at most.\n    max_tokens: answer length budget." in doc

    def undocumented(strategy: Strategy = "direct") -> None:
        """Summary only."""

    assert option_docs(document_options(undocumented)) == {"strategy": "prompting strategy: direct, cot or cot-refine."}


def test_document_options_refuses_a_section_after_args() -> None:
    def factory(strategy: Strategy = "direct") -> None:
        """Summary.

        Args:
            strategy: how.

        Returns:
            nothing.
        """

    with pytest.raises(ValueError, match="'Args:' must be the last section"):
        document_options(factory)
