"""Dense encoding on Ray: a dataset of shard ranges mapped by a pool of encoder actors (the only module importing ray).

The corpus is cut into shards of ``shard_size`` documents; a Ray dataset holds one row per
shard still to encode, and ``map_batches`` sends the rows to a pool of actors, each holding
one encoder (on a GPU when the cluster has them). An actor reads its shard's documents
through the memory-mapped corpus store, encodes them and writes the shard file, exactly as
the single-process build does; the driver then builds the index from the shard files. The
corpus and index folders must therefore be visible to every node (a shared file system);
on one machine they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.errors import ConfigError, MissingDependencyError
from ..corpus import DocumentStore
from ..retrievers import Encoder, Pooling, Shards, index_text, write_shard


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("Distributed indexing (--engine ray)", "ray[data]", "ray") from None
    return ray


class _ShardEncoder:
    """A Ray actor: one encoder, loaded once, encoding whole shards into files."""

    def __init__(
        self,
        corpus: str,
        model: str | None,
        device: str,
        batch_size: int,
        prefix: str,
        folder: str,
        size: int,
        pooling: Pooling = "model",
    ) -> None:
        self.store = DocumentStore(corpus)
        self.encoder = Encoder(model, device=device, batch_size=batch_size, pooling=pooling)
        self.prefix = prefix
        self.shards = Shards(Path(folder))
        self.size = size

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        rows = []
        for shard in batch["shard"].tolist():
            start, stop = shard * self.size, min((shard + 1) * self.size, len(self.store))
            texts = [self.prefix + index_text(self.store[i]) for i in range(start, stop)]
            write_shard(self.shards, shard, self.encoder.encode(texts))
            rows.append(stop - start)
        return {"shard": batch["shard"], "rows": np.array(rows, dtype=np.int64)}


def ray_shard_encoder(
    corpus: Path,
    *,
    model: str | None,
    batch_size: int,
    document_prefix: str,
    address: str | None,
    workers: int | None,
    pooling: Pooling = "model",
) -> Callable[[Iterable[str], Shards, int], None]:
    """The ``encode`` option of a disk build (:class:`DenseOptions`) that encodes the missing shards on Ray.

    Connects to the cluster at ``address`` (``None``: start a local Ray runtime) and uses
    ``workers`` encoder actors (default: one per GPU when the cluster has GPUs, else one per
    CPU). Shards already on disk (an interrupted build) are not encoded again.
    """
    ray = _ray()

    def encode(texts: Iterable[str], shards: Shards, shard_size: int) -> None:
        del texts  # actors read the documents themselves
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        pool = workers or gpus or max(1, int(resources.get("CPU", 1)))
        if pool < 1:
            raise ConfigError("workers", f"needs at least one encoder actor, not {pool}")
        n = len(DocumentStore(corpus))
        todo = [s for s in range((n + shard_size - 1) // shard_size) if not shards.path(s).exists()]
        if not todo:
            return
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        dataset = ray.data.from_items([{"shard": s} for s in todo], override_num_blocks=len(todo))
        done = dataset.map_batches(
            _ShardEncoder,
            fn_constructor_args=(
                str(corpus),
                model,
                "cuda" if gpus else "cpu",
                batch_size,
                document_prefix,
                str(shards.folder.parent),
                shard_size,
                pooling,
            ),
            batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=pool),
            num_gpus=1 if gpus else 0,
            num_cpus=0 if gpus else 1,
        ).take_all()
        written = sum(int(row["rows"]) for row in done)
        expected = sum(min((s + 1) * shard_size, n) - s * shard_size for s in todo)
        if written != expected:
            raise RuntimeError(f"Ray encoded {written} documents, expected {expected}")

    return encode
