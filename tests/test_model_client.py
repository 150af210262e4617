import pytest

from runtime.config import ModelResilienceConfig
from runtime.engine.events import EventType, RuntimeEventBus
from runtime.messages import ToolCall, ai, human
from runtime.model import (
    ModelClient,
    ModelConfig,
    ModelConfigurationError,
    ModelHTTPError,
    ModelResponse,
    ModelResponseError,
    ModelTimeoutError,
    OpenAICompatibleProvider,
    ScriptedProvider,
    Usage,
)

FAST = {"backoff_initial": 0.01, "backoff_max": 0.01}


class FlakyProvider:
    """Fails with the given errors, in order, then answers; records the config of every attempt."""

    def __init__(self, *errors: Exception, content: str = "done"):
        self.errors = list(errors)
        self.content = content
        self.configs: list[ModelConfig] = []

    async def complete(self, messages, config, on_delta=None):
        self.configs.append(config)
        if self.errors:
            raise self.errors.pop(0)
        if config.stream and on_delta is not None:
            for part in ("do", "ne"):
                on_delta(part)
        return ModelResponse(
            message=ai(self.content),
            usage=Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5),
            model=config.model or "default",
            finish_reason="stop",
        )


def resilience(**kwargs) -> ModelResilienceConfig:
    return ModelResilienceConfig(**FAST, **kwargs)


def events(bus: RuntimeEventBus) -> list[tuple[str, dict]]:
    return [(event.type, event.payload) for event in bus.history]


async def test_success_publishes_started_and_completed_with_payloads():
    bus = RuntimeEventBus()
    client = ModelClient(FlakyProvider(), model="m1")
    tools = [{"type": "function", "function": {"name": "calc"}}]

    response = await client.invoke(
        [human("a"), human("b")], ModelConfig(tools=tools), event_bus=bus, node="agent"
    )

    assert response.message.content == "done"
    assert [e.node for e in bus.history] == ["agent", "agent"]
    (started_type, started), (completed_type, completed) = events(bus)
    assert started_type == EventType.MODEL_CALL_STARTED
    assert started == {"model": "m1", "attempt": 1, "message_count": 2, "tools": 1, "stream": False}
    assert completed_type == EventType.MODEL_CALL_COMPLETED
    assert completed["model"] == "m1"
    assert completed["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert completed["finish_reason"] == "stop"
    assert completed["attempts"] == 1
    assert completed["duration_ms"] >= 0


async def test_streamed_fragments_become_text_delta_events_and_reach_on_delta():
    bus = RuntimeEventBus()
    seen: list[str] = []
    client = ModelClient(ScriptedProvider(["Hello there world"]))

    response = await client.invoke(
        [human("hi")], ModelConfig(stream=True), event_bus=bus, on_delta=seen.append
    )

    deltas = [payload["delta"] for kind, payload in events(bus) if kind == EventType.TEXT_DELTA]
    assert deltas == seen == ["Hello ", "there ", "world"]
    assert response.message.content == "Hello there world"
    kinds = [kind for kind, _ in events(bus)]
    assert kinds[0] == EventType.MODEL_CALL_STARTED and kinds[-1] == EventType.MODEL_CALL_COMPLETED


async def test_retries_retryable_errors_then_succeeds():
    bus = RuntimeEventBus()
    provider = FlakyProvider(ModelHTTPError(429, "slow down"), ModelTimeoutError("late"))
    client = ModelClient(provider, model="m1", resilience=resilience(max_retries=2))

    response = await client.invoke([human("q")], event_bus=bus)

    assert response.message.content == "done"
    assert [c.model for c in provider.configs] == ["m1", "m1", "m1"]
    failed = [p for kind, p in events(bus) if kind == EventType.MODEL_CALL_FAILED]
    assert [(p["attempt"], p["will_retry"]) for p in failed] == [(1, True), (2, True)]
    assert failed[0]["error"] == "ModelHTTPError: model endpoint answered HTTP 429: slow down"
    completed = [p for kind, p in events(bus) if kind == EventType.MODEL_CALL_COMPLETED]
    assert completed[0]["attempts"] == 3


async def test_fallback_models_get_the_same_config_after_retries_run_out():
    provider = FlakyProvider(*(ModelHTTPError(503, "down") for _ in range(4)))
    client = ModelClient(
        provider, model="primary", resilience=resilience(max_retries=1, fallback_models=["second", "third"])
    )
    choice = {"type": "function", "function": {"name": "calc"}}

    response = await client.invoke([human("q")], ModelConfig(tool_choice=choice, temperature=0.3))

    assert [c.model for c in provider.configs] == ["primary", "primary", "second", "second", "third"]
    assert all(c.tool_choice == choice and c.temperature == 0.3 for c in provider.configs)
    assert response.model == "third"


async def test_raises_the_last_error_when_everything_fails():
    bus = RuntimeEventBus()
    provider = FlakyProvider(*(ModelHTTPError(status, "down") for status in (500, 502, 503, 504)))
    client = ModelClient(provider, model="p", resilience=resilience(max_retries=1, fallback_models=["f"]))

    with pytest.raises(ModelHTTPError) as info:
        await client.invoke([human("q")], event_bus=bus)

    assert info.value.status == 504
    assert [c.model for c in provider.configs] == ["p", "p", "f", "f"]
    failed = [p for kind, p in events(bus) if kind == EventType.MODEL_CALL_FAILED]
    assert [(p["model"], p["will_retry"]) for p in failed] == [
        ("p", True),
        ("p", True),
        ("f", True),
        ("f", False),
    ]
    assert not [kind for kind, _ in events(bus) if kind == EventType.MODEL_CALL_COMPLETED]


async def test_non_retryable_errors_fail_at_once():
    bus = RuntimeEventBus()
    provider = FlakyProvider(ModelHTTPError(400, "bad request"), content="never")
    client = ModelClient(provider, resilience=resilience(fallback_models=["other"]))

    with pytest.raises(ModelHTTPError):
        await client.invoke([human("q")], event_bus=bus)

    assert len(provider.configs) == 1
    assert [p["will_retry"] for kind, p in events(bus) if kind == EventType.MODEL_CALL_FAILED] == [False]


async def test_resilience_decides_which_statuses_and_timeouts_retry():
    provider = FlakyProvider(ModelHTTPError(500, "x"))
    client = ModelClient(provider, resilience=resilience(retry_on_status=[429]))
    with pytest.raises(ModelHTTPError):
        await client.invoke([human("q")])

    provider = FlakyProvider(ModelTimeoutError("late"))
    client = ModelClient(provider, resilience=resilience(retry_on_timeout=False))
    with pytest.raises(ModelTimeoutError):
        await client.invoke([human("q")])

    provider = FlakyProvider(ModelResponseError("garbage"))
    with pytest.raises(ModelResponseError):
        await ModelClient(provider, resilience=resilience()).invoke([human("q")])
    assert len(provider.configs) == 1


async def test_call_config_wins_over_client_defaults_and_extra_params_merge():
    provider = FlakyProvider()
    defaults = ModelConfig(model="d", temperature=0.1, timeout=5, extra_params={"seed": 1, "user": "a"})
    client = ModelClient(provider, model="client-model", defaults=defaults)

    await client.invoke([human("q")], ModelConfig(temperature=0.9, extra_params={"user": "b"}))
    await client.invoke([human("q")])
    await ModelClient(provider, model="client-model").invoke([human("q")])

    first, second, third = provider.configs
    assert (first.model, first.temperature, first.timeout) == ("d", 0.9, 5)
    assert first.extra_params == {"seed": 1, "user": "b"}
    assert second == defaults
    assert third.model == "client-model"


async def test_scripted_tool_calls_pass_through_unchanged():
    call = ToolCall(id="c1", name="calc", arguments={"x": 2})
    client = ModelClient(ScriptedProvider([{"tool_calls": [call]}]))
    response = await client.invoke([human("q")])
    assert response.tool_calls == (call,)


# -- resolve() -------------------------------------------------------------------------
ENV_NAMES = [
    f"{prefix}_{name}" for prefix in ("JIANMU", "OPENAI") for name in ("BASE_URL", "API_KEY", "MODEL")
]


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_resolve_without_anything_names_the_variables(clean_env):
    with pytest.raises(ModelConfigurationError) as info:
        ModelClient.resolve(env_override=True)
    message = str(info.value)
    for name in ("JIANMU_BASE_URL", "JIANMU_API_KEY", "JIANMU_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        assert name in message


def test_resolve_keeps_the_given_provider_when_the_environment_has_no_endpoint(clean_env):
    scripted = ScriptedProvider(["hi"])
    clean_env.setenv("OPENAI_API_KEY", "sk-unrelated")  # a key alone does not turn a sample live

    client = ModelClient.resolve(scripted, env_override=True, timeout=3)

    assert client.provider is scripted
    assert client.defaults.timeout == 3


def test_resolve_env_endpoint_replaces_the_provider(clean_env):
    clean_env.setenv("OPENAI_BASE_URL", "http://openai.example/v1")
    clean_env.setenv("JIANMU_BASE_URL", "http://jianmu.example/v1/")
    clean_env.setenv("OPENAI_API_KEY", "sk-test")
    clean_env.setenv("OPENAI_MODEL", "env-model")
    resilience_config = resilience(max_retries=0)

    client = ModelClient.resolve(
        ScriptedProvider(["hi"]), model="arg-model", env_override=True, resilience=resilience_config
    )

    assert isinstance(client.provider, OpenAICompatibleProvider)
    assert client.provider.url == "http://jianmu.example/v1/chat/completions"
    assert client.model == "env-model"
    assert client.resilience is resilience_config
    assert "sk-test" not in repr(client.provider)


def test_resolve_ignores_the_environment_unless_asked(clean_env):
    clean_env.setenv("JIANMU_BASE_URL", "http://jianmu.example/v1")
    scripted = ScriptedProvider(["hi"])
    assert ModelClient.resolve(scripted).provider is scripted
    with pytest.raises(ModelConfigurationError):
        ModelClient.resolve()


def test_resolve_from_arguments(clean_env):
    client = ModelClient.resolve(base_url="http://local:8000/v1", model="qwen")
    assert client.provider.url == "http://local:8000/v1/chat/completions"
    assert client.model == "qwen"

    keyed = ModelClient.resolve(api_key="sk-x", model="gpt")
    assert keyed.provider.url == "https://api.openai.com/v1/chat/completions"
