"""Model access: one `ModelClient` in front of interchangeable providers."""

from runtime.model.client import ModelClient
from runtime.model.errors import (
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
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
    "ModelError",
    "ModelHTTPError",
    "ModelProvider",
    "ModelResponse",
    "ModelResponseError",
    "ModelTimeoutError",
    "OpenAICompatibleProvider",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "ScriptedRequest",
    "ScriptedResponse",
    "Usage",
]
