"""The ``ddi`` and ``chemprot`` extraction tasks and their shipped data."""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.builtin_tasks import extraction
from ebmeval.models import Model
from ebmeval.models.providers.scripted import ScriptedModel
from ebmeval.runner import RunConfig, run
from ebmeval.scorers._triplets import Counts, micro_f1
from ebmeval.store import RunStore
from ebmeval.tasks import SampleContext, create_task

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


def _build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_extraction_data", ROOT / "scripts/build_extraction_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ddi_counts_match_the_standard_test_split() -> None:
    samples = extraction.load_ddi()
    assert len(samples) == 790
    assert len(extraction.load_ddi("positive")) == 487
    types = Counter(t[1] for s in samples for t in s.metadata["triplets"])
    assert types == {"advise": 221, "effect": 360, "int": 96, "mechanism": 302}
    assert sum(s.metadata["pairs"] for s in samples) - sum(types.values()) == 4737  # negative pairs


def test_chemprot_sentences_and_labels() -> None:
    samples = extraction.load_chemprot()
    assert len(samples) == 1395
    labels = {t[1] for s in samples for t in s.metadata["triplets"]}
    assert labels <= set(extraction.CHEMPROT_TYPES) and len(extraction.CHEMPROT_TYPES) == 13
    assert all("<<" not in s.input and "[[" not in s.input for s in samples)
    first = samples[0]
    assert first.metadata["triplets"][0] == ["Androgen", "ANTAGONIST", "androgen receptor"]


@pytest.mark.skipif(not SHARED.exists(), reason="needs the project's shared data folder")
def test_shipped_files_are_what_the_build_script_writes(tmp_path: Path) -> None:
    script = _build_script()
    script.write_records(tmp_path / "ddi.jsonl.gz", script.ddi_records(SHARED / "ddi_corpus/DDICorpus-2013.zip"))
    chemprot, skipped = script.chemprot_records(SHARED / "chemprot_scibert/test.jsonl")
    script.write_records(tmp_path / "chemprot.jsonl.gz", chemprot)
    data = ROOT / "src/ebmeval/builtin_tasks/data"
    assert (tmp_path / "ddi.jsonl.gz").read_bytes() == (data / "extraction_ddi.jsonl.gz").read_bytes()
    assert (tmp_path / "chemprot.jsonl.gz").read_bytes() == (data / "extraction_chemprot.jsonl.gz").read_bytes()
    assert skipped == 6
    with gzip.open(data / "extraction_ddi.jsonl.gz", "rt") as lines:
        assert json.loads(next(lines))["id"].startswith("DDI-DrugBank")


def test_prompt_lists_entities_unless_asked_not_to() -> None:
    sample = next(s for s in extraction.load_ddi("positive") if len(s.metadata["entity_names"]) >= 2)
    with_entities = create_task("ddi")
    without = create_task("ddi", entities=False)
    assert isinstance(with_entities.workflow, extraction.ExtractionWorkflow)
    assert isinstance(without.workflow, extraction.ExtractionWorkflow)
    shown = with_entities.workflow.task_prompt(sample)
    assert "Entities: " + "; ".join(sample.metadata["entity_names"]) in shown
    assert "mechanism:" in shown and sample.input in shown
    assert "Entities:" not in without.workflow.task_prompt(sample)
    assert with_entities.version != without.version


def test_bad_subset_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="subset"):
        create_task("ddi", subset="negative")


async def test_system_prompt_goes_first() -> None:
    task = create_task("chemprot", system_prompt="You are a curator.")
    api = ScriptedModel(["none"])
    await task.workflow(task.dataset[0], SampleContext({"model": Model(api)}))
    sent = api.requests[0][0]
    assert [m.role for m in sent] == ["system", "user"] and sent[0].content == "You are a curator."


def test_gold_answers_give_micro_f1_one_and_empty_answers_zero(tmp_path: Path) -> None:
    task = create_task("ddi", subset="positive")
    gold = {s.input: "\n".join(" | ".join(t[::-1]) for t in s.metadata["triplets"]) for s in task.dataset[:5]}
    # entities given in reverse order: DDI pairs are unordered, so reversed gold still matches
    model = Model(ScriptedModel(lambda messages, _c: next(v for k, v in gold.items() if k in messages[-1].content)))
    store_path = tmp_path / "runs.sqlite"
    config = RunConfig(shuffle=False, task="ddi", task_args={"subset": "positive"}, limit=5, store=str(store_path))
    result = run(config, task=task, models={"model": model})
    report = micro_f1(RunStore(store_path), result.run.run_id)
    assert report.overall.f1 == 1.0 and report.overall.fp == 0 and report.overall.fn == 0
    empty = Model(ScriptedModel(lambda _m, _c: "none"))
    config = RunConfig(
        shuffle=False,
        task="ddi",
        task_args={"subset": "positive"},
        model="scripted:none",
        limit=5,
        store=str(store_path),
    )
    result = run(config, task=task, models={"model": empty})
    report = micro_f1(RunStore(store_path), result.run.run_id)
    assert report.overall == Counts(0, 0, sum(len(s.metadata["triplets"]) for s in task.dataset[:5]))
    assert report.overall.f1 == 0.0


@pytest.mark.local_model
def test_ddi_with_the_small_local_model(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.sqlite"
    config = RunConfig(
        shuffle=False,
        task="ddi",
        task_args={"subset": "positive"},
        model="local:smollm2",
        model_args={"n_threads": 1},
        limit=1,
        generate={"max_tokens": 24},
        store=str(store_path),
        cache=False,
    )
    result = run(config)
    assert result.progress.errors == 0
    report = micro_f1(RunStore(store_path), result.run.run_id)
    assert report.samples == 1 and report.overall.tp + report.overall.fn >= 1


def test_every_summary_carries_the_corpus_micro_f1(tmp_path: Path) -> None:
    from ebmeval.runner import summarize

    task = create_task("ddi", subset="positive")
    model = Model(ScriptedModel(lambda _m, _c: "none"))
    store_path = tmp_path / "runs.sqlite"
    config = RunConfig(shuffle=False, task="ddi", task_args={"subset": "positive"}, limit=4, store=str(store_path))
    result = run(config, task=task, models={"model": model})
    summary = summarize(RunStore(store_path), result.run.run_id)
    headline = {m.metric: m for m in summary.metrics if m.scorer == "triplet-f1" and m.group is None}
    expected = micro_f1(RunStore(store_path), result.run.run_id).overall
    assert headline["micro_f1"].value == expected.f1 == 0.0 and headline["micro_f1"].n == 4
    assert headline["micro_recall"].value == expected.recall
    assert {"micro_f1", "micro_precision", "micro_recall", "f1"} <= set(headline)
