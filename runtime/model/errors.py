"""What can go wrong when talking to a model, as a small hierarchy a caller can act on.

`retryable` is each error's default answer to "might the same request work a moment
later?"; `ModelClient` refines it with `ModelResilienceConfig` (which statuses, timeouts).
No message here ever carries an API key: providers redact before they raise.
"""

from __future__ import annotations


class ModelError(Exception):
    """Base class of every model-call failure."""

    retryable = False


class ModelHTTPError(ModelError):
    """The endpoint answered with a non-2xx status; `retry_after` is the wait in seconds it
    asked for (`Retry-After` / `retry-after-ms`), if any."""

    def __init__(self, status: int, message: str, *, retry_after: float | None = None):
        self.status = status
        self.detail = message
        self.retry_after = retry_after
        super().__init__(f"model endpoint answered HTTP {status}: {message}")

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status == 429 or self.status >= 500


def given_up(error: ModelError, why: str) -> ModelError:
    """`error` again, its one line saying why it was not retried (`why`)."""
    if isinstance(error, ModelHTTPError):
        return ModelHTTPError(error.status, f"{error.detail} ({why})", retry_after=error.retry_after)
    return type(error)(f"{error} ({why})")


class ModelTimeoutError(ModelError):
    """The call did not finish within its timeout."""

    retryable = True


class ModelDeadlineError(ModelTimeoutError):
    """The logical call's deadline (`ModelResilienceConfig.deadline`) passed: no time is left to retry."""

    retryable = False


class ModelConnectionError(ModelError):
    """The endpoint could not be reached (refused, reset, DNS)."""

    retryable = True


class ModelStreamError(ModelConnectionError):
    """A stream stopped before its end or reported an error event: retried like a dropped
    connection (a proxy cut it, the server failed mid-answer), never taken as a short answer."""


class ModelResponseError(ModelError):
    """The endpoint answered 2xx with something that is not a usable completion."""


class ModelConfigurationError(ModelError):
    """No usable model is configured; the message says what to set."""


class ScriptExhaustedError(ModelError):
    """A scripted model was asked for more replies than its script holds."""


__all__ = [
    "ModelConfigurationError",
    "ModelConnectionError",
    "ModelDeadlineError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelStreamError",
    "ModelTimeoutError",
    "ScriptExhaustedError",
    "given_up",
]
