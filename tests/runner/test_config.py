from __future__ import annotations

from pathlib import Path

import pytest

from ebmeval._util.errors import ConfigError
from ebmeval.runner import config_from_flags, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_yaml_config_loads_with_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, "task: pubmedqa\nmodel: local:smollm2\ngenerate:\n  max_tokens: 8\nlimit: 5\n")
    cfg = load_config(path, {"limit": 7})
    assert cfg.task == "pubmedqa" and cfg.model == "local:smollm2"
    assert cfg.generate.max_tokens == 8 and cfg.limit == 7


def test_bad_field_type_names_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "task: pubmedqa\ngenerate:\n  temperature: hot\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert f"{path}:3" in message and "generate.temperature" in message and "'hot'" in message


def test_unknown_field_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "task: pubmedqa\nlimt: 5\n")
    with pytest.raises(ConfigError, match=r"run.yaml:2.*field 'limt'.*Extra inputs"):
        load_config(path)


def test_invalid_yaml_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "task: [unclosed\n"))
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path, "- a\n- b\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")


def test_flags_validate_like_files() -> None:
    with pytest.raises(ConfigError, match="field 'limit'"):
        config_from_flags(task="pubmedqa", limit=0)
    assert config_from_flags(task="pubmedqa", limit=None).limit is None
