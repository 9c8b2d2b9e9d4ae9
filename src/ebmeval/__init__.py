"""ebmeval: evaluate large language models on the work of evidence-based medicine."""

from .models import GenerateConfig, Model, get_model
from .runner import RunConfig, arun, load_config, rescore, run, summarize
from .store import RunStore
from .tasks import Document, Sample, Score, Task, create_scorer, create_task, scorer, task

__version__ = "0.1.0"

__all__ = [
    "Document",
    "GenerateConfig",
    "Model",
    "RunConfig",
    "RunStore",
    "Sample",
    "Score",
    "Task",
    "__version__",
    "create_scorer",
    "create_task",
    "get_model",
    "load_config",
    "rescore",
    "arun",
    "run",
    "scorer",
    "summarize",
    "task",
]
