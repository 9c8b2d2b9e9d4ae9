"""What identifies the runs and score sets of the built-in tasks and scorers is pinned.

A change that gives the runs of a built-in task another identity (they would no longer resume), or a
built-in scorer's score sets another spec, fails here. When the change is meant (a prompt reworded,
data corrected), regenerate the pin with ``python -m tests.test_identity_pin`` and say so in the change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ebmeval.tasks import create_task, scorer_spec, task_calls, task_registry
from ebmeval.tasks._task import create_scorer, scorer_registry

PIN = Path(__file__).parent / "identity_pin.json"

VARIANTS: dict[str, list[dict[str, Any]]] = {
    "pubmedqa": [{"strategy": "cot"}, {"setting": "question-only", "answer_format": "strict"}],
    "caremedeval": [{"context": "abstract"}, {"context": "none", "prompt_set": "paper"}],
    "synthesis": [
        *({"workflow": w} for w in ("parametric-zero-shot", "parametric-cot", "standard-rag", "negated-rag")),
        {"workflow": "feasibility"},
        {"workflow": "standard-rag", "rerank_top_n": 0},
        {"workflow": "parametric-cot", "prompts": "medmeta-paper"},
    ],
}
"""Option sets pinned beside each task's defaults."""


def _built_in(module: str) -> bool:
    return module.startswith("ebmeval.")


def _task_identity(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """What a run of ``name`` with ``args`` is identified by, beside its models and settings."""
    try:
        task = create_task(name, **args)
    except Exception as exc:  # a task that needs a file
        return {"error": type(exc).__name__}
    return {
        "args": {k: v for k, v in task.args.items() if k not in task.content_args | task.inapplicable_args},
        "version": task.version,
        "roles": list(task.roles),
        "role_defaults": task.role_defaults,
        "scorers": [scorer_spec(s, {}) for s in task.scorers],
        "calls": [[role, repr(call)] for role, call in task_calls(task)],
        "generate_config": task.generate_config.model_dump(mode="json"),
        "samples": len(task.dataset),
        "first_samples": [s.id for s in task.dataset[:3]],
    }


def identities() -> dict[str, Any]:
    """Every built-in task, with its defaults and the ``VARIANTS``, and every built-in scorer's default spec."""
    tasks = {}
    for name in task_registry:
        if _built_in(task_registry.get(name).__module__):
            for args in [{}, *VARIANTS.get(name, [])]:
                tasks[f"{name} {json.dumps(args, sort_keys=True)}"] = _task_identity(name, args)
    scorers = {}
    for name in scorer_registry:
        if _built_in(scorer_registry.get(name).__module__):
            try:
                scorers[name] = scorer_spec(create_scorer(name), {})
            except Exception as exc:  # a scorer that needs an argument (a checkpoint, a labels file)
                scorers[name] = {"error": type(exc).__name__}
    found: dict[str, Any] = json.loads(json.dumps({"tasks": tasks, "scorers": scorers}, sort_keys=True, default=str))
    return found


def test_the_identities_of_built_in_runs_and_score_sets_are_pinned() -> None:
    pinned = json.loads(PIN.read_text(encoding="utf-8"))
    now = identities()
    changed = sorted(
        key
        for kind in ("tasks", "scorers")
        for key in set(pinned[kind]) | set(now[kind])
        if pinned[kind].get(key) != now[kind].get(key)
    )
    assert changed == [], (
        f"identities changed for {changed}: existing runs or score sets of these would no longer resume; "
        "if that is meant, regenerate with python -m tests.test_identity_pin"
    )


if __name__ == "__main__":
    PIN.write_text(json.dumps(identities(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {PIN}\n")
