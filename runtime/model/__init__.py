"""Model access: one `ModelClient` in front of interchangeable providers."""

from runtime.model.client import ModelClient
from runtime.model.errors import (
    ModelConfigurationError,
    ModelConnectionError,
    ModelDeadlineError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelStreamError,
    ModelTimeoutError,
    ScriptExhaustedError,
)
from runtime.model.openai_compatible import OpenAICompatibleProvider
from runtime.model.scripted import ScriptedProvider, ScriptedRequest, ScriptedResponse
from runtime.model.types import DeltaCallback, ModelConfig, ModelProvider, ModelResponse, Usage

__all__ = [
    "DeltaCallback",
    "ModelClient",
    "ModelConfig",
    "ModelConfigurationError",
    "ModelConnectionError",
    "ModelDeadlineError",
    "ModelError",
    "ModelHTTPError",
    "ModelProvider",
    "ModelResponse",
    "ModelResponseError",
    "ModelStreamError",
    "ModelTimeoutError",
    "OpenAICompatibleProvider",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "ScriptedRequest",
    "ScriptedResponse",
    "Usage",
]
