"""A provider for any OpenAI-compatible `/chat/completions` endpoint (OpenAI, vLLM, Ollama, ...).

One attempt per `complete()`; failures become `ModelError`s whose text never holds the
API key. When the server reports no usage, the usage is estimated with `Usage.estimate`
rather than reported as zero, so token budgets still mean something.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import ValidationError

from runtime.messages import Message, ToolCall, ai
from runtime.model.errors import (
    ModelConfigurationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
)
from runtime.model.types import DeltaCallback, ModelConfig, ModelResponse, Usage

_SAMPLING = ("temperature", "max_tokens", "top_p", "top_k")
_EXCERPT = 300


class OpenAICompatibleProvider:
    """Talks HTTP to `{base_url}/chat/completions`, plain JSON or server-sent events."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
        default_model: str | None = None,
    ):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self.timeout = timeout
        self.default_model = default_model
        self._owns_client = http_client is None
        self._http = http_client or httpx.AsyncClient()

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider({self.url!r}, model={self.default_model!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._http.aclose()

    async def complete(
        self, messages: list[Message], config: ModelConfig, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        body = self._body(messages, config)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        timeout = config.timeout or self.timeout
        try:
            async with self._http.stream(
                "POST", self.url, json=body, headers=headers, timeout=timeout
            ) as resp:
                if resp.status_code >= 300:
                    await resp.aread()
                    raise ModelHTTPError(resp.status_code, self._excerpt(resp.text) or resp.reason_phrase)
                if config.stream:
                    reply, usage, finish_reason, model = await self._read_stream(resp, on_delta)
                else:
                    await resp.aread()
                    reply, usage, finish_reason, model = self._read_json(resp.text)
        except (ValidationError, AttributeError, TypeError) as exc:  # JSON of an unexpected shape
            raise ModelResponseError(
                f"unexpected response shape from {self.url}: {self._excerpt(str(exc))}"
            ) from None
        except httpx.TimeoutException:
            raise ModelTimeoutError(f"model call to {self.url} timed out after {timeout:g}s") from None
        except httpx.TransportError as exc:
            raise ModelConnectionError(
                f"cannot reach {self.url}: {self._redact(str(exc)) or type(exc).__name__}"
            ) from None
        return ModelResponse(
            message=reply,
            usage=usage or Usage.estimate(messages, reply),
            model=model or body["model"],
            finish_reason=finish_reason,
        )

    def _body(self, messages: list[Message], config: ModelConfig) -> dict[str, Any]:
        model = config.model or self.default_model
        if not model:
            raise ModelConfigurationError(
                "no model name: pass model= (or ModelConfig.model), or set JIANMU_MODEL (or OPENAI_MODEL)"
            )
        body: dict[str, Any] = {
            "model": model,
            "messages": [m.to_openai() for m in messages],
            "stream": config.stream,
        }
        if config.stream:
            body["stream_options"] = {"include_usage": True}
        if config.tools:
            body["tools"] = config.tools
        if config.tool_choice is not None:
            body["tool_choice"] = config.tool_choice
        body.update({name: getattr(config, name) for name in _SAMPLING if getattr(config, name) is not None})
        body.update(config.extra_params)
        return body

    # -- reading answers -----------------------------------------------------------
    def _read_json(self, text: str) -> tuple[Message, Usage | None, str | None, str | None]:
        data = self._parse(text)
        choice = self._first_choice(data)
        message = choice.get("message")
        if not isinstance(message, dict):
            raise ModelResponseError(f"choice has no message: {self._excerpt(text)}")
        calls = [
            (
                call.get("id"),
                (call.get("function") or {}).get("name"),
                (call.get("function") or {}).get("arguments"),
            )
            for call in message.get("tool_calls") or ()
        ]
        reply = ai(message.get("content"), self._tool_calls(calls))
        return reply, self._usage(data), choice.get("finish_reason"), data.get("model")

    async def _read_stream(
        self, resp: httpx.Response, on_delta: DeltaCallback | None
    ) -> tuple[Message, Usage | None, str | None, str | None]:
        """Merge SSE chunks: content in order, tool-call fragments by their `index`."""
        content: list[str] = []
        calls: dict[int, list[Any]] = {}  # index -> [id, name, argument fragments]
        usage = finish_reason = model = None
        seen_choice = False
        async for line in resp.aiter_lines():
            if not line.startswith("data:"):
                continue  # blank separators, comments (":"), "event:" lines
            payload = line[5:].strip()
            if payload == "[DONE]":
                break
            chunk = self._parse(payload)
            if "error" in chunk:
                raise ModelResponseError(
                    f"stream reported an error: {self._excerpt(json.dumps(chunk['error']))}"
                )
            model = chunk.get("model") or model
            usage = self._usage(chunk) or usage
            for choice in chunk.get("choices") or ():
                seen_choice = True
                finish_reason = choice.get("finish_reason") or finish_reason
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    content.append(delta["content"])
                    if on_delta is not None:
                        on_delta(delta["content"])
                for fragment in delta.get("tool_calls") or ():
                    call = calls.setdefault(fragment.get("index", len(calls)), [None, None, []])
                    function = fragment.get("function") or {}
                    call[0] = fragment.get("id") or call[0]
                    call[1] = function.get("name") or call[1]
                    call[2].append(function.get("arguments") or "")
        if not seen_choice:
            raise ModelResponseError(f"stream from {self.url} ended without any choice")
        merged = [(cid, name, "".join(parts)) for cid, name, parts in (calls[i] for i in sorted(calls))]
        return ai("".join(content) or None, self._tool_calls(merged)), usage, finish_reason, model

    def _tool_calls(self, calls: list[tuple[Any, Any, Any]]) -> list[ToolCall]:
        """Malformed argument JSON is kept on the call as `parse_error`, never raised."""
        result = []
        for n, (call_id, name, arguments) in enumerate(calls):
            if not name:
                raise ModelResponseError(f"tool call #{n + 1} has no function name")
            result.append(ToolCall.from_raw(call_id or f"call_{n + 1}", name, arguments))
        return result

    def _parse(self, text: str) -> dict[str, Any]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ModelResponseError(f"response is not JSON: {self._excerpt(text)}") from None
        if not isinstance(data, dict):
            raise ModelResponseError(f"response is not a JSON object: {self._excerpt(text)}")
        return data

    def _first_choice(self, data: dict[str, Any]) -> dict[str, Any]:
        choices = data.get("choices")
        if not choices or not isinstance(choices[0], dict):
            raise ModelResponseError(f"response has no choices: {self._excerpt(json.dumps(data))}")
        return choices[0]

    @staticmethod
    def _usage(data: dict[str, Any]) -> Usage | None:
        raw = data.get("usage")
        if not isinstance(raw, dict):
            return None
        try:
            usage = Usage.model_validate(
                {k: v for k, v in raw.items() if k in Usage.model_fields and v is not None}
            )
        except ValidationError:
            return None
        if not usage.total_tokens:
            usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
        return usage

    # -- keeping the key out of messages ---------------------------------------------
    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _excerpt(self, text: str) -> str:
        text = " ".join(self._redact(text).split())
        return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


__all__ = ["OpenAICompatibleProvider"]
