"""A provider for any OpenAI-compatible `/chat/completions` endpoint (OpenAI, vLLM, Ollama, ...).

One attempt per `complete()`; failures become `ModelError`s whose text never holds the
API key (see `runtime.model.secrets`). When the server reports no usage, the usage is
estimated with `Usage.estimate` rather than reported as zero, so token budgets still mean
something.

The request carries only what was configured: no sampling parameter (`temperature`,
`top_p`, `top_k`, `max_tokens`, `max_completion_tokens`) unless it was set, `stream` only
when true, `parallel_tool_calls` only with tools, tool messages as `role` / `content` /
`tool_call_id`. `top_k` is not in the chat-completions API: it is sent when configured, for
the servers that take it (vLLM, Ollama, LiteLLM); leave it unset for one that does not. Every call is bounded: `timeout` is a
deadline for the whole attempt (connect, response, every byte of a stream: a server
dripping a byte a second or sending keep-alives forever still ends in time), the body may
not exceed `max_response_bytes`, and a stream must end with `[DONE]` or a finish reason.
A 4xx/5xx answer's `Retry-After` (seconds, or an HTTP date counted from the answer's `Date`)
or `retry-after-ms` goes on the error for the client's backoff.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from runtime.messages import Message, ToolCall, ai
from runtime.model.errors import (
    ModelConfigurationError,
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    ModelStreamError,
    ModelTimeoutError,
)
from runtime.model.secrets import Redactor, checked_api_key
from runtime.model.types import DeltaCallback, ModelConfig, ModelResponse, Usage
from runtime.urls import masked_url

if TYPE_CHECKING:  # imported where a request is made: ~7 MB a process without a real model never needs
    import httpx

_SAMPLING = ("temperature", "max_tokens", "max_completion_tokens", "top_p", "top_k")
_EXCERPT = 300
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024


class _TooLarge(Exception):
    pass


class OpenAICompatibleProvider:
    """Talks HTTP to `{base_url}/chat/completions`, plain JSON or server-sent events.

    The API key is checked here, when the client is built: surrounding whitespace is
    stripped, a key with control characters is refused (`ModelConfigurationError`, one
    line that does not print it).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
        default_model: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ):
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be >= 1, not {max_response_bytes}")
        self._endpoint = base_url.rstrip("/") + "/chat/completions"
        self.url = masked_url(self._endpoint)  # what messages, traces and stores show
        self._api_key = checked_api_key(api_key)
        self._redactor = Redactor(self._api_key)
        self.timeout = timeout
        self.default_model = default_model
        self.max_response_bytes = max_response_bytes
        self._owns_client = http_client is None
        if http_client is None:
            import httpx

            http_client = httpx.AsyncClient()
        self._http = http_client

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider({self.url!r}, model={self.default_model!r})"

    async def aclose(self) -> None:
        if self._owns_client:
            await self._http.aclose()

    async def complete(
        self, messages: list[Message], config: ModelConfig, on_delta: DeltaCallback | None = None
    ) -> ModelResponse:
        import httpx

        body = self._body(messages, config)
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        timeout = config.timeout or self.timeout
        feed, flush = self._redactor.holding_back(on_delta) if on_delta is not None else (None, None)
        try:
            async with asyncio.timeout(timeout):
                reply, usage, finish_reason, model = await self._attempt(body, headers, timeout, feed)
            if flush is not None:
                flush()
            response = ModelResponse(  # a `model` or `finish_reason` that is not text is an odd shape too
                message=reply,
                usage=usage or Usage.estimate(messages, reply),
                model=model or body["model"],
                finish_reason=finish_reason,
            )
            return self._without_key(response)
        except (ValidationError, AttributeError, TypeError, KeyError, IndexError) as exc:  # JSON of an odd shape
            raise ModelResponseError(
                f"unexpected response shape from {self.url}: {self._excerpt(str(exc))}"
            ) from None
        except (TimeoutError, httpx.TimeoutException):
            raise ModelTimeoutError(f"model call to {self.url} timed out after {timeout:g}s") from None
        except httpx.DecodingError as exc:
            raise ModelResponseError(f"response from {self.url} cannot be decoded: {self._excerpt(str(exc))}") from None
        except _TooLarge:
            raise ModelResponseError(
                f"response from {self.url} is larger than max_response_bytes={self.max_response_bytes:,} "
                "(raise it with OpenAICompatibleProvider(max_response_bytes=...))"
            ) from None
        except httpx.TransportError as exc:
            raise ModelConnectionError(
                f"cannot reach {self.url}: {masked_url(self._redactor(str(exc))) or type(exc).__name__}"
            ) from None

    def _without_key(self, response: ModelResponse) -> ModelResponse:
        """The answer as recorded and shown: a key the server or the model repeated is masked."""
        data = response.model_dump()
        clean = self._redactor.scrub(data)
        return response if clean is data else ModelResponse.model_validate(clean)

    async def _attempt(
        self, body: dict[str, Any], headers: dict[str, str], timeout: float, on_delta: DeltaCallback | None
    ) -> tuple[Message, Usage | None, str | None, str | None]:
        async with self._http.stream("POST", self._endpoint, json=body, headers=headers, timeout=timeout) as resp:
            if resp.status_code >= 300:
                text = (await self._read_capped(resp, _EXCERPT * 20, cut=True)).decode(errors="replace")
                raise ModelHTTPError(
                    resp.status_code, self._excerpt(text) or resp.reason_phrase, retry_after=_retry_after(resp.headers)
                )
            if body.get("stream"):
                return await self._read_stream(resp, on_delta)
            return self._read_json((await self._read_capped(resp, self.max_response_bytes)).decode(errors="replace"))

    async def _read_capped(self, resp: httpx.Response, limit: int, cut: bool = False) -> bytes:
        """The (decoded) body, at most `limit` bytes: cut there (`cut`), else `_TooLarge`."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > limit:
                if cut:
                    chunks.append(chunk[: len(chunk) - (size - limit)])
                    break
                raise _TooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    def _body(self, messages: list[Message], config: ModelConfig) -> dict[str, Any]:
        model = config.model or self.default_model
        if not model:
            raise ModelConfigurationError(
                "no model name: pass model= (or ModelConfig.model), or set JIANMU_MODEL (or OPENAI_MODEL)"
            )
        body: dict[str, Any] = {"model": model, "messages": [m.to_openai() for m in messages]}
        if config.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if config.tools:
            body["tools"] = config.tools
        if config.tool_choice is not None:
            body["tool_choice"] = config.tool_choice
        if config.tools and config.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = config.parallel_tool_calls
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
            (call.get("id"), (call.get("function") or {}).get("name"), (call.get("function") or {}).get("arguments"))
            for call in _list(message.get("tool_calls"), "tool_calls")
        ]
        reply = ai(message.get("content"), self._tool_calls(calls))
        return reply, self._usage(data), choice.get("finish_reason"), data.get("model")

    async def _read_stream(
        self, resp: httpx.Response, on_delta: DeltaCallback | None
    ) -> tuple[Message, Usage | None, str | None, str | None]:
        """Merge SSE chunks: content in order, tool-call fragments by their `index`.

        The stream must end with `[DONE]` or carry a finish reason: one that just stops
        (a dropped connection, a proxy cutting it) or reports an error event is a
        `ModelStreamError`, retried like a dropped connection, never a shortened answer.
        """
        content: list[str] = []
        calls: dict[int, list[Any]] = {}  # index -> [id, name, argument fragments]
        usage = finish_reason = model = None
        seen_choice = done = False
        async for line in self._capped_lines(resp):
            if not line.startswith("data:"):
                continue  # blank separators, comments (":"), "event:" lines
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            chunk = self._parse(payload)
            if "error" in chunk:
                raise ModelStreamError(f"stream from {self.url} reported an error: "
                                       f"{self._excerpt(_dump(chunk['error']))}")
            model = chunk.get("model") or model
            usage = self._usage(chunk) or usage
            for choice in _list(chunk.get("choices"), "choices"):
                seen_choice = True
                finish_reason = choice.get("finish_reason") or finish_reason
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    content.append(delta["content"])
                    if on_delta is not None:
                        on_delta(delta["content"])
                for fragment in _list(delta.get("tool_calls"), "tool_calls"):
                    call = calls.setdefault(fragment.get("index", len(calls)), [None, None, []])
                    function = fragment.get("function") or {}
                    call[0] = fragment.get("id") or call[0]
                    call[1] = function.get("name") or call[1]
                    call[2].append(function.get("arguments") or "")
        if not done and finish_reason is None:
            raise ModelStreamError(
                f"stream from {self.url} stopped before its end (no [DONE], no finish reason) "
                f"after {sum(map(len, content)):,} characters"
            )
        if not seen_choice:
            raise ModelResponseError(f"stream from {self.url} ended without any choice")
        merged = [(cid, name, "".join(parts)) for cid, name, parts in (calls[i] for i in sorted(calls))]
        return ai("".join(content) or None, self._tool_calls(merged)), usage, finish_reason, model

    async def _capped_lines(self, resp: httpx.Response) -> AsyncIterator[str]:
        """The stream's lines, its bytes counted as they arrive: a line that never ends is cut off
        by the cap too (`aiter_lines` would hold all of it first). Lines end in CRLF, LF or a bare
        CR, as the SSE format allows (a CRLF cut between two reads gives a blank line, which the
        reader skips)."""
        size = 0
        pending: list[bytes] = []  # the start of a line not ended yet
        async for chunk in resp.aiter_bytes():
            size += len(chunk)
            if size > self.max_response_bytes:
                raise _TooLarge
            *ended, rest = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
            if ended:
                ended[0] = b"".join([*pending, ended[0]])
                pending = []
                for line in ended:
                    yield line.decode(errors="replace")
            pending.append(rest)
        if tail := b"".join(pending):
            yield tail.decode(errors="replace")

    def _tool_calls(self, calls: list[tuple[Any, Any, Any]]) -> list[ToolCall]:
        """Malformed argument JSON is kept on the call as `parse_error`, never raised."""
        result = []
        for n, (call_id, name, arguments) in enumerate(calls):
            if not name or not isinstance(name, str):
                raise ModelResponseError(f"tool call #{n + 1} has no function name")
            result.append(ToolCall.from_raw(str(call_id or f"call_{n + 1}"), name, arguments))
        return result

    def _parse(self, text: str) -> dict[str, Any]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise ModelResponseError(f"response is not JSON: {self._excerpt(text)}") from None
        except RecursionError:
            raise ModelResponseError(f"response from {self.url} is JSON nested too deeply to read") from None
        if not isinstance(data, dict):
            raise ModelResponseError(f"response is not a JSON object: {self._excerpt(text)}")
        return data

    def _first_choice(self, data: dict[str, Any]) -> dict[str, Any]:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ModelResponseError(f"response has no list of choices: {self._excerpt(_dump(data))}")
        return choices[0]

    @staticmethod
    def _usage(data: dict[str, Any]) -> Usage | None:
        raw = data.get("usage")
        if not isinstance(raw, dict):
            return None
        try:
            usage = Usage.model_validate({k: v for k, v in raw.items() if k in Usage.model_fields and v is not None})
        except ValidationError:
            return None
        if not usage.total_tokens:
            usage.total_tokens = usage.prompt_tokens + usage.completion_tokens
        return usage

    def _excerpt(self, text: str) -> str:
        """One line of at most `_EXCERPT` characters, with the API key (and any trace of it) removed."""
        text = " ".join(text[: _EXCERPT * 20].split())
        text = masked_url(self._redactor(text))
        return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def _list(value: Any, what: str) -> list[Any]:
    """A JSON list field that may be absent (None); anything else is an odd shape."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ModelResponseError(f"'{what}' must be a list, got {type(value).__name__}")
    return value


def _dump(data: Any) -> str:
    try:
        return json.dumps(data)
    except (RecursionError, ValueError):
        return "(unprintable)"


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, else `Retry-After` in seconds or as an
    HTTP date. A date counts from the response's own `Date` (both on the server's clock, so a clock
    skew between it and this machine does not change the wait), else from this machine's clock."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    when = _http_date(value)
    if when is None:
        return None
    sent = _http_date(headers.get("date"))
    return max(0.0, when - (sent if sent is not None else time.time()))


def _http_date(value: str | None) -> float | None:
    """An HTTP date as a timestamp, None when absent or unreadable. One written without a zone (the
    asctime form) is GMT like every HTTP date, not this machine's local time."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return (when if when.tzinfo is not None else when.replace(tzinfo=datetime.UTC)).timestamp()


__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "OpenAICompatibleProvider"]
