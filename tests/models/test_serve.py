import asyncio
import time

import httpx
import pytest

from ebmeval._util.errors import ModelError
from ebmeval.models import GenerateConfig, ModelOutput, get_model, user
from ebmeval.models._serve import model_server
from ebmeval.models.providers.openai_compatible import OpenAICompatibleModel, RetryPolicy
from tests.helpers.fault_proxy import Fault, FaultProxy, Seen
from tests.models import GRADE_SCHEMA, is_grade, requires_small_model

pytestmark = [pytest.mark.server, requires_small_model]

SHORT = GenerateConfig(temperature=0.0, max_tokens=4, seed=1)
QUICK_RETRY = RetryPolicy(max_retries=3, backoff_base=0.01, backoff_cap=0.05)


def through(proxy: FaultProxy, *, timeout: float = 30.0, max_concurrency: int = 16) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        "smollm2", proxy.url + "/v1", timeout=timeout, max_concurrency=max_concurrency, retry=QUICK_RETRY
    )


def upstream(base_url: str) -> str:
    return base_url.removesuffix("/v1")


async def test_real_server_answers(smollm2_server: str) -> None:
    model = get_model(f"openai-compatible:smollm2@{smollm2_server}")
    config = SHORT.model_copy(update={"logprobs": True, "top_logprobs": 2})
    output = await model.generate("What is the capital of France?", config)
    assert output.text and output.model == "openai-compatible/smollm2"
    assert output.logprobs is not None and len(output.logprobs) == output.usage.output_tokens
    assert all(len(t.top) == 2 for t in output.logprobs)
    again = await model.generate("What is the capital of France?", config)
    assert again.text == output.text
    await model.aclose()


async def test_real_server_follows_a_response_schema(smollm2_server: str) -> None:
    model = get_model(f"openai-compatible:smollm2@{smollm2_server}")
    config = SHORT.model_copy(update={"max_tokens": 60, "response_schema": GRADE_SCHEMA})
    output = await model.generate("Tell me about dragons.", config)
    assert is_grade(output.text)
    await model.aclose()


def test_server_lists_the_model_and_reports_health(smollm2_server: str) -> None:
    models = httpx.get(smollm2_server + "/models").json()
    assert models["data"][0]["id"] == "smollm2-135m-instruct-q4_1"
    assert httpx.get(upstream(smollm2_server) + "/health").json() == {"status": "ok"}


async def test_connection_pool_bounds_requests_in_flight(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server)) as proxy:
        model = through(proxy, max_concurrency=2)
        outputs = await asyncio.gather(*(model.generate([user(f"Say {i}.")], SHORT) for i in range(8)))
        await model.aclose()
    assert len(outputs) == 8 and all(o.text for o in outputs)
    assert proxy.requests_seen == 8 and proxy.max_in_flight == 2


async def test_model_semaphore_bounds_requests_in_flight(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server)) as proxy:
        model = get_model(f"openai-compatible:smollm2@{proxy.url}/v1", max_concurrency=3)
        outputs = await asyncio.gather(*(model.generate(f"Say {i}.", SHORT) for i in range(8)))
        await model.aclose()
    assert len(outputs) == 8 and proxy.max_in_flight == 3


async def test_429_with_retry_after_then_success(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server), [Fault.status_code(429, retry_after="1")]) as proxy:
        model = through(proxy)
        model.retry = RetryPolicy(max_retries=1, backoff_base=0.01, backoff_cap=5.0)
        start = time.monotonic()
        output = await model.generate([user("Hi")], SHORT)
        elapsed = time.monotonic() - start
        await model.aclose()
    assert output.text and proxy.requests_seen == 2
    assert elapsed >= 1.0


async def test_503_twice_then_success(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server), [Fault.status_code(503)] * 2) as proxy:
        model = through(proxy)
        assert (await model.generate([user("Hi")], SHORT)).text
        await model.aclose()
    assert [s.fault for s in proxy.seen] == ["status", "status", "pass"]


async def test_hang_times_out_and_the_retry_succeeds(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server), [Fault.hang()]) as proxy:
        model = through(proxy, timeout=0.5)
        start = time.monotonic()
        # The per-request timeout overrides the provider's 0.5 s.
        output = await model.generate([user("Hi")], SHORT.model_copy(update={"timeout": 3.0}))
        elapsed = time.monotonic() - start
        await model.aclose()
    assert output.text and proxy.requests_seen == 2
    assert elapsed >= 3.0


async def test_broken_bodies_are_retried(smollm2_server: str) -> None:
    faults = [Fault.non_json(), Fault.truncate(), Fault.drop()]
    async with FaultProxy(upstream(smollm2_server), faults) as proxy:
        model = through(proxy)
        output = await model.generate([user("Hi")], SHORT)
        await model.aclose()
    assert output.text
    assert [s.fault for s in proxy.seen] == ["non_json", "truncate", "drop", "pass"]


async def test_a_trickled_answer_arrives_whole(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server), [Fault.trickle(0.002)]) as proxy:
        model = through(proxy)
        output = await model.generate([user("Hi")], SHORT)
        await model.aclose()
    assert output.text and proxy.seen[0].finished and proxy.requests_seen == 1


async def test_retry_budget_exhausted_is_a_clear_error(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server), lambda _seen: Fault.status_code(503, message="busy")) as proxy:
        model = through(proxy)
        with pytest.raises(ModelError, match=r"gave up after 4 attempts; last error: HTTP 503: busy"):
            await model.generate([user("Hi")], SHORT)
        await model.aclose()
    assert proxy.requests_seen == 4


async def test_no_request_is_lost_under_mixed_faults(smollm2_server: str) -> None:
    failed: set[bytes] = set()
    kinds = [Fault.status_code(500), Fault.truncate(), Fault.non_json(), Fault.drop()]

    def fault(seen: Seen) -> Fault:
        # Each request's first attempt fails, in a different way per request; its retry passes.
        if seen.body in failed:
            return Fault()
        failed.add(seen.body)
        return kinds[len(failed) % len(kinds)]

    async with FaultProxy(upstream(smollm2_server), fault) as proxy:
        model = through(proxy, max_concurrency=4)
        results = await asyncio.gather(
            *(model.generate([user(f"Count to {i}.")], SHORT) for i in range(12)), return_exceptions=True
        )
        await model.aclose()
    assert all(isinstance(r, ModelOutput) and r.text for r in results), results
    assert proxy.requests_seen == 24
    assert sum(s.finished for s in proxy.seen if s.fault == "pass") == 12


def test_server_that_cannot_start_reports_why() -> None:
    with (
        pytest.raises(ModelError, match="did not start: error: .*no such model file"),
        model_server("local:/no/such/model.gguf", startup_timeout=60),
    ):
        pass


async def test_fault_proxy_refuses_past_its_budget_and_stops_itself(smollm2_server: str) -> None:
    async with FaultProxy(upstream(smollm2_server), max_requests=1, lifetime=1.0) as proxy:
        async with httpx.AsyncClient(base_url=proxy.url) as client:
            assert (await client.get("/health")).status_code == 200
            refused = await client.get("/health")
            assert refused.status_code == 503 and "budget exhausted" in refused.text
            await asyncio.sleep(1.2)
            with pytest.raises(httpx.TransportError):
                await client.get("/health")
    assert [s.fault for s in proxy.seen] == ["pass", "status"]
