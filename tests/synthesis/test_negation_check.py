"""The negation check: a verdict stored with each negation, failed negations refused and made again."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ebmeval.cli._app import app
from ebmeval.models import ChatMessage, GenerateConfig, Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.synthesis import NegatedRAG, NegationStore
from ebmeval.synthesis._negation import NegationCheckError, negate_documents, parse_check

from .helpers import SAMPLE, context, reply_by_prompt, scripted


def checker(*answers: str) -> ScriptedModel:
    """A model that negates like the helpers' and answers each check with the next of ``answers`` (the last repeats)."""
    left = list(answers)
    respond = reply_by_prompt()

    def reply(messages: Sequence[ChatMessage], config: GenerateConfig) -> str:
        if "Does the rewritten abstract invert" in messages[-1].content:
            return left.pop(0) if len(left) > 1 else left[0]
        return respond(messages, config)

    return ScriptedModel(reply, name="scripted/checker")


def test_a_check_reply_is_read_strictly() -> None:
    assert [parse_check(t) for t in ("Yes", " yes.", "No, it does not", "NO")] == [
        "inverted",
        "inverted",
        "not inverted",
        "not inverted",
    ]
    assert [parse_check(t) for t in ("Maybe", "Yesterday it was", "", "The answer is yes")] == ["unchecked"] * 4


async def test_the_check_is_stored_with_the_negation_recorded_and_counted(tmp_path: Path) -> None:
    store = NegationStore(tmp_path / "negations.sqlite")
    judge = checker("Yes", "I cannot tell")
    ctx = context(scripted(), negation_checker=judge)
    result = await NegatedRAG(store)(SAMPLE, ctx)
    assert {n.document_id: n.verdict for n in store} == {"s1": "inverted", "s2": "unchecked"}
    assert [r["check"] for r in result.metadata["negations"]] == ["inverted", "unchecked"]
    assert result.metadata["negation_checks"] == {"inverted": 1, "unchecked": 1}
    assert ctx.memo.get_step("negation/s1")["check"] == "inverted"  # type: ignore[index]
    assert "negation-check/s1" in ctx.steps
    config = judge.requests[0][1]
    assert config.temperature == 0.0 and config.max_tokens == 4
    # a stored, checked negation is reused without a negation or a check call
    again = context(scripted(), negation_checker=checker("No"))
    await NegatedRAG(store)(SAMPLE, again)
    assert not any(s.startswith(("negate/", "negation-check/")) for s in again.steps)


async def test_without_a_checker_role_the_negator_checks(tmp_path: Path) -> None:
    from ebmeval.tasks import SampleContext

    negator = checker("Yes")
    _documents, records = await negate_documents(
        SampleContext({"negator": Model(negator)}), SAMPLE.documents, NegationStore(tmp_path / "n.sqlite")
    )
    assert [r["check"] for r in records] == ["inverted", "inverted"]
    assert len(negator.requests) == 4  # a negation and a check per abstract


async def test_a_negation_not_inverted_fails_the_sample_until_redo_makes_it_again(tmp_path: Path) -> None:
    path = tmp_path / "negations.sqlite"
    store = NegationStore(path)
    negator = scripted(name="scripted/negator")
    with pytest.raises(NegationCheckError, match="document s1 by scripted/negator .* does not invert"):
        await NegatedRAG(store)(SAMPLE, context(scripted(), negator=negator, negation_checker=checker("No")))
    assert [n.verdict for n in store] == ["not inverted"]
    # stored with its verdict: a re-run fails again without asking anyone
    with pytest.raises(NegationCheckError):
        await NegatedRAG(store)(SAMPLE, context(scripted(), negator=negator, negation_checker=checker("Yes")))
    assert len(negator.requests) == 1
    store.close()

    redone = CliRunner().invoke(app, ["synthesis", "redo-negations", "--negation-store", str(path)])
    assert redone.exit_code == 0 and "1 negations" in redone.output, redone.output
    store = NegationStore(path)
    assert [(n.verdict, n.attempt) for n in store] == [("redo", 1)]
    result = await NegatedRAG(store)(SAMPLE, context(scripted(), negator=negator, negation_checker=checker("Yes")))
    # made again, sampled (greedy decoding would repeat the failed rewrite), checked and stored
    remade = negator.requests[1][1]
    assert remade.temperature == 0.7 and remade.seed == 1
    assert result.metadata["negation_checks"] == {"inverted": 2, "unchecked": 0}
    assert sorted((n.document_id, n.verdict, n.attempt) for n in store) == [
        ("s1", "inverted", 1),
        ("s2", "inverted", 0),
    ]


def test_redo_on_a_missing_store_exits_2_with_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    from ebmeval.cli import main

    nope = tmp_path / "nope.sqlite"
    monkeypatch.setattr("sys.argv", ["ebmeval", "synthesis", "redo-negations", "--negation-store", str(nope)])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2 and "no negation store here" in capsys.readouterr().err and not nope.exists()


async def test_a_store_made_before_checks_gains_the_columns_and_its_negations_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    first = NegationStore(path)
    await negate_documents(context(scripted()), SAMPLE.documents, first)
    first.close()
    with sqlite3.connect(path) as db:  # the table as releases before the check made it
        db.execute("ALTER TABLE negations DROP COLUMN verdict")
        db.execute("ALTER TABLE negations DROP COLUMN attempt")
    old = NegationStore(path)
    assert [n.verdict for n in old] == [None, None]
    judge = checker("Yes", "maybe")
    _documents, records = await negate_documents(context(scripted(), negation_checker=judge), SAMPLE.documents, old)
    assert [r["cached"] for r in records] == [True, True] and len(judge.requests) == 2
    assert [n.verdict for n in old] == ["inverted", "unchecked"]
    old.close()
    redone = CliRunner().invoke(app, ["synthesis", "redo-negations", "--negation-store", str(path), "--unchecked"])
    assert redone.exit_code == 0 and "1 negations" in redone.output
