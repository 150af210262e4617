"""`ModelClient`: the one door every node uses to call a model.

A provider makes single attempts; the client turns them into one *logical* call:
retries with backoff, fallback models, stream forwarding and telemetry events.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from runtime.config import ModelResilienceConfig, get_config
from runtime.engine.events import EventType, RuntimeEventBus
from runtime.messages import Message
from runtime.model.errors import (
    ModelConfigurationError,
    ModelDeadlineError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
    given_up,
)
from runtime.model.openai_compatible import DEFAULT_MAX_RESPONSE_BYTES, OpenAICompatibleProvider
from runtime.model.types import DeltaCallback, ModelConfig, ModelProvider, ModelResponse
from runtime.telemetry.content import captures_content, message_parts

ENV_PREFIXES = ("JIANMU_", "OPENAI_")
DEFAULT_BASE_URL = "https://api.openai.com/v1"


def _env(name: str) -> str | None:
    """`JIANMU_<name>`, else `OPENAI_<name>`, else None."""
    return next((os.environ[p + name] for p in ENV_PREFIXES if os.environ.get(p + name)), None)


def _merge(defaults: ModelConfig, config: ModelConfig | None) -> ModelConfig:
    """Fields set explicitly on `config` win; `extra_params` are merged key by key."""
    if config is None:
        return defaults
    update = {name: getattr(config, name) for name in config.model_fields_set}
    update["extra_params"] = {**defaults.extra_params, **config.extra_params}
    return defaults.model_copy(update=update)


class ModelClient:
    """Calls a `ModelProvider` with retries, fallback models and events.

    `model` names the model when neither the call's config nor `defaults` does (none given:
    `models.default` of `jianmu.yaml`). Every error `_retryable` accepts waits the same way
    before its retry: `Retry-After` if the server sent one (up to `retry_after_max`), else the
    backoff, capped at `backoff_max`, and never past the call's `deadline`
    (`ModelResilienceConfig`).
    """

    def __init__(
        self,
        provider: ModelProvider,
        *,
        model: str | None = None,
        resilience: ModelResilienceConfig | None = None,
        defaults: ModelConfig | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ):
        if isinstance(provider, ModelClient):
            raise TypeError("ModelClient(provider): this is a ModelClient already; use it as it is")
        self.provider = provider
        self.model = model if model is not None else get_config().models.default
        self.resilience = resilience or ModelResilienceConfig()
        self.defaults = defaults or ModelConfig()
        # how the client waits between attempts and reads the time: a test records the waits
        self._sleep, self._clock = sleep, clock

    @classmethod
    def resolve(
        cls,
        provider: ModelProvider | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        env_override: bool = False,
        resilience: ModelResilienceConfig | None = None,
        timeout: float | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> ModelClient:
        """Build a client from arguments and, with `env_override`, from the environment.

        With `env_override=True`, `JIANMU_BASE_URL` / `JIANMU_API_KEY` / `JIANMU_MODEL`
        (each falling back to its `OPENAI_*` twin) win over the arguments, and a base URL
        found in the environment replaces `provider`: a sample passes its scripted
        provider and runs live wherever an endpoint is configured. An API key alone
        means the OpenAI endpoint. `max_response_bytes` caps each answer of that endpoint.
        """
        env_base_url = None
        if env_override:
            env_base_url = _env("BASE_URL")
            base_url = env_base_url or base_url
            api_key = _env("API_KEY") or api_key
            model = _env("MODEL") or model
        if provider is None or env_base_url:
            if not (base_url or api_key):
                raise ModelConfigurationError(
                    "no model configured: pass provider= or base_url=, or set JIANMU_BASE_URL "
                    "(or OPENAI_BASE_URL) and JIANMU_API_KEY (or OPENAI_API_KEY), optionally "
                    "JIANMU_MODEL (or OPENAI_MODEL), and call resolve(env_override=True)"
                )
            provider = OpenAICompatibleProvider(base_url or DEFAULT_BASE_URL, api_key, default_model=model,
                                                max_response_bytes=max_response_bytes)
        return cls(provider, model=model, resilience=resilience, defaults=ModelConfig(timeout=timeout))

    async def invoke(
        self,
        messages: Sequence[Message],
        config: ModelConfig | None = None,
        *,
        event_bus: RuntimeEventBus | None = None,
        node: str | None = None,
        on_delta: DeltaCallback | None = None,
        on_restart: Callable[[], None] | None = None,
        resilience: ModelResilienceConfig | None = None,
    ) -> ModelResponse:
        """One logical call: every attempt gets the same messages and config, only `model` changes.

        `resilience` (a node's `ReActConfig.resilience`) replaces the client's own for this call.

        Raises the last error once retries and fallbacks are spent, or at once on an error
        that is not retryable. Streamed fragments go to `on_delta` and, as `text.delta`
        events, to `event_bus`; when an attempt that streamed some fails, `on_restart` is
        called before the next one (its fragments are not part of the answer). Each
        attempt publishes `model.call.started` and then `.failed` or `.completed`; the
        latter's `duration_ms` and `attempts` cover the whole logical call.
        """
        config = _merge(self.defaults, config)
        messages = list(messages)
        resilience = resilience or self.resilience
        models = [config.model or self.model, *resilience.fallback_models]
        started = time.monotonic()

        def emit(event_type: EventType, payload: dict[str, Any]) -> None:
            if event_bus is not None:
                event_bus.publish(event_type, payload, node=node)

        streamed = False

        def forward(delta: str) -> None:
            nonlocal streamed
            streamed = True
            if on_delta is not None:
                on_delta(delta)
            emit(EventType.TEXT_DELTA, {"delta": delta})

        deadline = self._clock() + resilience.deadline if resilience.deadline is not None else None
        attempt = 0
        last_error: ModelError | None = None
        contents = captures_content()  # the messages on the events only when the user opted in
        for number, model in enumerate(models):
            for retry in range(resilience.max_retries + 1):
                if deadline is not None and last_error is not None and self._clock() >= deadline:
                    raise given_up(last_error, f"the call's deadline of {resilience.deadline:g}s has passed")
                attempt += 1
                if streamed and on_restart is not None:
                    on_restart()
                streamed = False
                emit(
                    EventType.MODEL_CALL_STARTED,
                    {
                        "model": model,
                        "attempt": attempt,
                        "message_count": len(messages),
                        "tools": len(config.tools or ()),
                        "stream": config.stream,
                        **({"input_messages": [message_parts(m) for m in messages]} if contents else {}),
                    },
                )
                try:
                    response = await self._attempt(messages, config.model_copy(update={"model": model}), forward,
                                                   deadline, resilience)
                except Exception as exc:
                    retryable = self._retryable(exc, resilience)
                    wait, why = self._wait(exc, retry, resilience, deadline) if retryable else (None, None)
                    emit(
                        EventType.MODEL_CALL_FAILED,
                        {
                            "model": model,
                            "attempt": attempt,
                            "will_retry": wait is not None or (retryable and number + 1 < len(models)),
                            "error": f"{type(exc).__name__}: {exc}",
                        },
                    )
                    if not retryable:
                        raise
                    last_error = given_up(exc, why) if why else exc
                    if wait is None:
                        break  # this model's retries are over: the next model, if any
                    await self._sleep(wait)
                    continue
                emit(
                    EventType.MODEL_CALL_COMPLETED,
                    {
                        "model": response.model,
                        "usage": response.usage.to_dict(),
                        "finish_reason": response.finish_reason,
                        "attempts": attempt,
                        "duration_ms": round((time.monotonic() - started) * 1000, 1),
                        **({"output_message": message_parts(response.message)} if contents else {}),
                    },
                )
                return response
        assert last_error is not None  # there is always a model to try
        raise last_error

    async def _attempt(self, messages: list[Message], config: ModelConfig, forward: DeltaCallback,
                       deadline: float | None, resilience: ModelResilienceConfig) -> ModelResponse:
        """One attempt of the provider, cut at the call's deadline when it has one."""
        if deadline is None:
            return await self.provider.complete(messages, config, forward)
        try:
            async with asyncio.timeout(max(0.0, deadline - self._clock())):
                return await self.provider.complete(messages, config, forward)
        except TimeoutError:
            raise ModelDeadlineError(f"model call reached the call's deadline of {resilience.deadline:g}s") from None

    def _wait(self, error: Exception, retry: int, resilience: ModelResilienceConfig,
              deadline: float | None) -> tuple[float | None, str | None]:
        """(seconds to wait before retrying this model, None: no retry of it; why not, when the
        server's or the deadline's word is what stops it)."""
        if retry >= resilience.max_retries:
            return None, None
        retry_after = getattr(error, "retry_after", None)
        wait = resilience.backoff(retry, retry_after)
        if wait is None:
            return None, (f"the server asked to retry after {retry_after:g}s, more than "
                          f"retry_after_max={resilience.retry_after_max:g}s")
        if deadline is not None and self._clock() + wait >= deadline:
            return None, f"a retry after {wait:g}s would pass the call's deadline of {resilience.deadline:g}s"
        return wait, None

    @staticmethod
    def _retryable(exc: Exception, resilience: ModelResilienceConfig) -> bool:
        """Only model errors are retried (anything else is a bug, not a flaky endpoint)."""
        if isinstance(exc, ModelHTTPError):
            return exc.status in resilience.retry_on_status
        if isinstance(exc, ModelTimeoutError) and not isinstance(exc, ModelDeadlineError):
            return resilience.retry_on_timeout
        return isinstance(exc, ModelError) and exc.retryable

    async def aclose(self) -> None:
        """Release the provider's connections, if it holds any."""
        close: Any = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def checked_client(client: Any, where: str) -> Any:
    """`client` when it can be called like a `ModelClient` (has `invoke`); a `TypeError` saying how to
    wrap it when it is a provider (seed 000: nodes take a resolved client, not a bare provider)."""
    if client is None or callable(getattr(client, "invoke", None)):
        return client
    kind = type(client).__name__
    if callable(getattr(client, "complete", None)):
        raise TypeError(f"{where}: model_client is a {kind}, a model provider, not a ModelClient; wrap it: "
                        f"model_client=ModelClient({kind}(...)) or ModelClient.resolve(provider)")
    raise TypeError(f"{where}: model_client must be a ModelClient (from ModelClient.resolve(...)), not a {kind}")


__all__ = ["ModelClient", "checked_client"]
