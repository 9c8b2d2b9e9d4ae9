from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError, DataError
from ebmeval.models import Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.scorers.text import bleu, bleu_scorer, meteor_scorer, rouge, rouge_l
from ebmeval.tasks import Generation, ParsedAnswer, Sample, SampleContext, create_scorer, scorer_registry

pytest.importorskip("rouge_score")
pytest.importorskip("sacrebleu")

CTX = SampleContext({"model": Model(ScriptedModel())})
SAMPLE = Sample(
    id="1", input="q", target="IGF-1 is the first test", metadata={"steps": ["Acromegaly.", "IGF-1 first."]}
)


def generation(output: str, **metadata: object) -> Generation:
    return Generation(sample_id="1", output=output, answer=ParsedAnswer(value=output), metadata=metadata)


def test_scorers_are_registered() -> None:
    assert {"text/rouge-l", "text/bleu", "text/meteor", "text/bertscore"} <= set(scorer_registry)
    assert create_scorer("text/bleu").name == "text/bleu"


async def test_output_against_target() -> None:
    score = await rouge_l()(SAMPLE, generation("IGF-1 is the test"), CTX)
    assert score.values == {
        "rougeL": pytest.approx(rouge(["IGF-1 is the test"], [SAMPLE.target], ("rougeL",))[0]["rougeL"])
    }


async def test_metadata_sources_join_a_list_of_steps() -> None:
    chosen = bleu_scorer(prediction="metadata:rationale", reference="metadata:steps")
    score = await chosen(SAMPLE, generation("Final answer: A", rationale="Acromegaly. IGF-1 first."), CTX)
    assert score.values["bleu"] == pytest.approx(bleu(["Acromegaly. IGF-1 first."], ["Acromegaly. IGF-1 first."])[0])
    assert score.values["bleu"] == pytest.approx(1.0)


async def test_empty_prediction_is_none_not_zero() -> None:
    score = await bleu_scorer()(SAMPLE, generation("   "), CTX)
    assert score.values == {"bleu": None}


async def test_missing_reference_key_is_a_data_error() -> None:
    with pytest.raises(DataError, match="metadata.absent"):
        await bleu_scorer(reference="metadata:absent")(SAMPLE, generation("x"), CTX)


def test_bad_source_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="prediction"):
        rouge_l(prediction="rationale")


@pytest.mark.skipif(not Path("/usr/share/wordnet/index.sense").is_file(), reason="Debian WordNet not installed")
async def test_meteor_scorer() -> None:
    score = await meteor_scorer()(SAMPLE, generation(SAMPLE.target), CTX)
    assert score.values["meteor"] == pytest.approx(0.9985, abs=1e-3)


async def test_bertscore_values_carry_the_encoder_name() -> None:
    pytest.importorskip("bert_score")
    score = await create_scorer("text/bertscore")(SAMPLE, generation(SAMPLE.target), CTX)
    assert set(score.values) == {
        "precision@all-MiniLM-L6-v2-L5",
        "recall@all-MiniLM-L6-v2-L5",
        "f1@all-MiniLM-L6-v2-L5",
    }
    assert score.values["f1@all-MiniLM-L6-v2-L5"] == pytest.approx(1.0, abs=1e-5)
