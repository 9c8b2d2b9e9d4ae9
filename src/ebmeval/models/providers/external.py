"""``external:NAME``: a system whose outputs were produced outside ebmeval and are read from a file.

Runs of externally generated outputs (``ebmeval factuality run TASK --predictions FILE``) name
the system that wrote them with this provider; their workflow never calls it, so a call is a
:class:`ModelError`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..._util.errors import ModelError
from .._api import ModelAPI, modelapi
from .._types import ChatMessage, GenerateConfig, ModelOutput


class ExternalModel(ModelAPI):
    """Names a system whose outputs come from a file; it answers no request."""

    def __init__(self, name: str) -> None:
        self.name = f"external/{name or 'outputs'}"
        self.max_concurrency = 8

    async def generate(self, messages: Sequence[ChatMessage], config: GenerateConfig) -> ModelOutput:
        """Refuse: the outputs of an external system are read, not generated."""
        raise ModelError(f"{self.name}: the outputs of an external system are read from a file, not generated")


@modelapi("external")
def external(name: str, **options: object) -> ModelAPI:
    """``external:NAME`` names the system that produced the outputs (e.g. ``external:BART``)."""
    return ExternalModel(name)
