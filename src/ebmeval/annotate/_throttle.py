"""A per-client slowdown on failed credential lookups (invitation links, admin links, bearer tokens)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Record:
    failures: int
    last: float


class FailureThrottle:
    """Counts failed lookups per client address and makes the client wait after the first few.

    After ``free`` failures, a client must wait ``delay(n) = min(base * 2**(n - free - 1), cap)``
    seconds after its n-th failure before its next lookup is even tried; until then every lookup
    is refused (HTTP 429). Each admitted lookup counts as a failure from the moment it is admitted
    and is refunded when it succeeds, so concurrent requests cannot slip through one opening
    together, and a valid token refunds only its own lookup. A client's count is forgotten
    ``window`` seconds after its last failure. A steady guesser is held to 1/cap lookups per
    second. State is per process (per uvicorn worker).

    Args:
        free: Failures allowed without delay (typos).
        base: First delay, seconds.
        cap: Longest delay, seconds.
        window: Seconds without a failure after which a client starts afresh.
        max_clients: Clients remembered; the stalest are dropped beyond this.
        clock: Monotonic time source.
    """

    def __init__(
        self,
        *,
        free: int = 5,
        base: float = 1.0,
        cap: float = 60.0,
        window: float = 900.0,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.free, self.base, self.cap, self.window = free, base, cap, window
        self.max_clients = max_clients
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def delay(self, failures: int) -> float:
        """Seconds a client with ``failures`` failures waits after the last one."""
        if failures <= self.free:
            return 0.0
        return float(min(self.base * 2 ** (failures - self.free - 1), self.cap))

    def admit(self, client: str) -> float:
        """Seconds ``client`` must still wait (then nothing is counted), or 0: admitted, counted as a failure."""
        with self._lock:
            now = self._clock()
            record = self._records.get(client)
            if record is None or now - record.last > self.window:
                record = self._records[client] = _Record(0, now)
            wait = record.last + self.delay(record.failures) - now
            if wait > 0:
                return wait
            record.failures += 1
            record.last = now
            if len(self._records) > self.max_clients:
                stalest = min(self._records, key=lambda c: self._records[c].last)
                del self._records[stalest]
            return 0.0

    def succeeded(self, client: str) -> None:
        """Refund the admitted lookup of ``client`` that found its token."""
        with self._lock:
            record = self._records.get(client)
            if record is not None and record.failures > 0:
                record.failures -= 1
