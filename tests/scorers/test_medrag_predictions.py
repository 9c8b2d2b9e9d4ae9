"""``ebmeval score mirage/…`` on replies written in MedRAG's MIRAGE template.

MedRAG (Xiong et al., 2024, ``src/template.py``) asks for
``Dict{"step_by_step_thinking": Str(explanation), "answer_choice": Str{A/B/C/...}}``.
The replies below are written by hand in the shapes models give that template: bare,
indented, fenced, after a preface, with the option text after the letter, with an
unescaped newline in the reasoning.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ebmeval.cli._app import app

MEDQA = {
    "0000": '{"step_by_step_thinking": "The resident must not falsify the record. The first step is to tell the '
    "attending that the error has to be disclosed; reporting to the ethics committee or refusing to dictate come "
    'later if he insists.", "answer_choice": "B"}',
    "0001": '{\n  "step_by_step_thinking": "Hearing loss and paresthesias after chemotherapy point to cisplatin, '
    'which acts by cross-linking DNA.",\n  "answer_choice": "D"\n}',
    "0002": '```json\n{"step_by_step_thinking": "Acute kidney injury after catheterization with livedo and '
    'spindle-shaped vacuoles in vessels: cholesterol emboli.", "answer_choice": "B"}\n```',
    "0003": 'Here is the output in JSON:\n{"step_by_step_thinking": "Lipid A with a glucosamine dimer is '
    'endotoxin of gram-negative bacteria; E. coli ferments lactose and grows pink on MacConkey agar.", '
    '"answer_choice": "D. Lactose-fermenting, gram-negative rods forming pink colonies on MacConkey agar"}',
    "0004": '{"step_by_step_thinking": "Itchy, watery eyes in spring with a normal anterior chamber:\nallergic '
    'conjunctivitis. Steroid drops are for refractory cases, so fluorometholone.", "answer_choice": "D"}',
    "0005": '{"step_by_step_thinking": "Cocaine-related chest pain: beta blockers are avoided; the answer is D.",'
    ' "answer_choice": "D"}',
}
PUBMEDQA = {
    "12377809": '{"step_by_step_thinking": "Endosonography showed anismus in most patients with dyschesia.", '
    '"answer_choice": "A"}',
    "26163474": '{"step_by_step_thinking": "Sublingual varices were more frequent in hypertensive patients.", '
    '"answer_choice": "A. yes"}',
    "19100463": '```json\n{\n  "step_by_step_thinking": "The two assays correlated closely.",\n  "answer_choice": '
    '"B"\n}\n```',
}


def score(tmp_path: Path, task: str, replies: dict[str, str], *flags: str) -> tuple[int, str]:
    path = tmp_path / f"{task.replace('/', '-')}.jsonl"
    path.write_text("".join(json.dumps({"id": key, "output": text}) + "\n" for key, text in replies.items()))
    result = CliRunner().invoke(app, ["score", task, "--predictions", str(path), *flags])
    return result.exit_code, result.output


def test_every_medrag_reply_is_read(tmp_path: Path) -> None:
    code, output = score(tmp_path, "mirage/medqa", MEDQA, "--json")
    assert code == 0, output
    report = json.loads(output)
    assert report["scored"] == 6 and report["unparsed"] == 0
    (metric,) = report["metrics"]
    assert metric["value"] == 5 / 6  # 0004 answers D, the gold answer is B
    code, output = score(tmp_path, "mirage/pubmedqa", PUBMEDQA, "--json")
    report = json.loads(output)
    assert code == 0 and report["scored"] == 3 and report["unparsed"] == 0
    assert report["metrics"][0]["value"] == 2 / 3  # 19100463 answers B, the gold answer is A


def test_score_prints_a_table(tmp_path: Path) -> None:
    code, output = score(tmp_path, "mirage/medqa", MEDQA)
    assert code == 0, output
    assert "accuracy" in output and "0.833" in output and "6 scored · 0 unparsed" in output
