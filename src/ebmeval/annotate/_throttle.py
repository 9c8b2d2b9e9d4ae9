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
    """Counts failed lookups per client address and slows the client down after the first few.

    A lookup always runs, so a valid link or admin token opens whatever the address did before:
    guesses from a shared address (an office NAT, a proxy, an SSH tunnel) never lock out a valid
    link. Only failures are counted: after ``free`` of them, a client's next failed lookups are
    answered 429 (and not counted) until ``delay(n) = min(base * 2**(n - free - 1), cap)``
    seconds have passed since its n-th counted failure. A client's count is forgotten ``window``
    seconds after its last failure. State is per process (per uvicorn worker).

    Tokens carry 256 bits, so the answer to a guess tells an attacker nothing usable; the
    slowdown keeps a scanner's failures few, refused cheaply, and visible in the log.

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

    def failed(self, client: str) -> float:
        """Record a failed lookup of ``client``: 0 when counted, else the seconds it must still wait (not counted)."""
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
