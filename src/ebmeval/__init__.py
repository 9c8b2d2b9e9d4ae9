"""ebmeval: evaluate large language models on the work of evidence-based medicine."""

from .models import GenerateConfig, Model, get_model
from .tasks import Document, Sample, Score, Task, create_task, task

__version__ = "0.1.0"

__all__ = [
    "Document",
    "GenerateConfig",
    "Model",
    "Sample",
    "Score",
    "Task",
    "__version__",
    "create_task",
    "get_model",
    "task",
]
