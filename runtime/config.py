"""Runtime settings: built-in defaults, overridden by `jianmu.yaml` files.

Three files are read when present, each over the one before (a later one wins, key by key):
the user's, `jianmu.yaml` in the user config directory (platformdirs: `~/.config/jianmu-studio/`
on Linux); the working directory's `./jianmu.yaml`; then the file `$JIANMU_CONFIG` names (an
error if it does not exist). Only the keys a file names change; everything else keeps its
built-in default (each section is a model with defaults, so partial files merge deeply). Unknown
keys are errors naming the file, not silently ignored, so a typo cannot quietly leave a default
in force.
"""

from __future__ import annotations

import os
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from runtime.state.keys import StateKeys

CONFIG_ENV = "JIANMU_CONFIG"
CONFIG_FILENAME = "jianmu.yaml"
USER_DIRS = "jianmu-studio"  # the folder of the user's config, data and cache directories (platformdirs)


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file and the field."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # .inf is no bound, .nan no JSON


class ModelsSettings(_Section):
    """Model names. `default` is the model of a `ModelClient` built without one (after
    `$JIANMU_MODEL` when the client reads the environment); `react` is `ReActConfig.model`, the
    ReAct loops' own, independent of `default` (seed 000). `None`: not chosen here."""

    default: str | None = None
    react: str | None = None


class LLMSettings(_Section):
    """Each sampling setting left `None` is not sent: the endpoint's own default applies."""

    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    top_p: float | None = None
    top_k: int | None = Field(default=None, ge=1)
    timeout: float = Field(default=60.0, gt=0)
    max_budget_tokens: int | None = Field(default=None, ge=1)


class LimitsSettings(_Section):
    """`max_iterations` is a ReAct loop's own default; `max_rounds` caps the rounds (model calls)
    of every ReAct loop built while it is set, whatever its `max_iterations`; the host's
    `max_iterations_hard_limit` caps every loop of a run, however it was built (`RunContext`)."""

    max_iterations: int = Field(default=10, ge=1)
    max_rounds: int | None = Field(default=None, ge=1)
    max_iterations_hard_limit: int | None = Field(default=None, ge=1)


class WritersSettings(_Section):
    """How a checkpoint store tells a run whose writer died from one still written (seconds)."""

    heartbeat: float = Field(default=10.0, gt=0)
    """How often a writer says it is alive while it saves nothing (a run paused, or suspended)."""
    abandoned_after: float = Field(default=60.0, gt=0)
    """Nothing heard from a run's writer for this long: the run is shown as abandoned."""

    @model_validator(mode="after")
    def _longer_than_a_heartbeat(self) -> WritersSettings:
        if self.abandoned_after <= self.heartbeat:
            raise ValueError(f"abandoned_after ({self.abandoned_after:g}) must be longer than "
                             f"heartbeat ({self.heartbeat:g}), or every idle writer would look gone")
        return self


class PostgresSettings(_Section):
    """How long a PostgreSQL store waits for its server (seconds)."""

    answer_timeout: float = Field(default=90.0, gt=0)
    """A statement not answered for this long fails, naming the store, and its connection is dropped: a
    server that accepted the connection and then answers nothing (stopped, hung) holds no read or write
    longer than that. A statement that legitimately runs longer (none of the store's do) needs it raised."""


class JianmuSettings(_Section):
    models: ModelsSettings = Field(default_factory=ModelsSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    writers: WritersSettings = Field(default_factory=WritersSettings)
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)


_cache: tuple[tuple[tuple[str, int], ...], JianmuSettings] | None = None


def user_config_file() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir(USER_DIRS)) / CONFIG_FILENAME


def config_files() -> list[Path]:
    """The config files in force, the one that wins last: the user's, the working directory's, `$JIANMU_CONFIG`."""
    found = [path for path in (user_config_file(), Path.cwd() / CONFIG_FILENAME) if path.is_file()]
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        path = Path(configured)
        if not path.is_file():
            what = "not a file" if path.exists() else "no such config file"
            raise ConfigError(f"{path}: {what} (named by ${CONFIG_ENV})")
        found.append(path)
    unique: dict[Path, Path] = {}
    for path in found:  # a file named twice counts once, where it comes last
        unique.pop(path.resolve(), None)
        unique[path.resolve()] = path
    return list(unique.values())


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over`'s keys over `base`'s, mappings merged key by key."""
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _validated(data: dict[str, Any], where: str) -> JianmuSettings:
    try:
        return JianmuSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ConfigError(f"{where}: invalid setting {field}: {first['msg']}{more}") from None


def _load(paths: list[Path]) -> JianmuSettings:
    """The settings of `paths` merged, each file checked on its own first (an error names its file)."""
    data: dict[str, Any] = {}
    for path in paths:
        layer = _read(path)
        _validated(layer, str(path))
        data = _merged(data, layer)
    return _validated(data, " over ".join(str(path) for path in reversed(paths)))


def _read(path: Path) -> dict[str, Any]:
    import yaml  # here: only a process with a jianmu.yaml pays for the parser (~1.5 MB)

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise ConfigError(f"{path}: invalid YAML{where}: {problem}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:  # the parser recurses per level of nesting
        raise ConfigError(f"{path}: nested too deeply to be a config file") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return data


def get_config() -> JianmuSettings:
    """The current settings, read again only when a config file comes, goes or changes (its mtime)."""
    global _cache
    paths = config_files()
    key = tuple((str(path.resolve()), path.stat().st_mtime_ns) for path in paths)
    if _cache is None or _cache[0] != key:
        _cache = (key, _load(paths))
    return _cache[1]


def reset_config_cache() -> None:
    global _cache
    _cache = None


def _setting(dotted: str) -> Any:
    """A default factory reading `get_config().<dotted>` when a config object is built."""
    read = attrgetter(dotted)
    return lambda: read(get_config())


class ModelResilienceConfig(BaseModel):
    """How one logical model call survives transient failures.

    Each model gets `1 + max_retries` attempts with exponential backoff
    (`backoff_initial * backoff_multiplier**n`, capped at `backoff_max` seconds) on a
    retryable error; then each of `fallback_models` is tried the same way, in order. When
    the server says how long to wait (`Retry-After`, `retry-after-ms`), that wait is kept as
    it is up to `retry_after_max` seconds: a longer one is not waited (a shorter wait would
    only be refused again), and the model's remaining retries are given up. `deadline`
    bounds the whole logical call, attempts and waits together: no wait goes past it and
    each attempt's timeout is cut to what is left. 529 is an overloaded server (as 503).
    """

    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(default=2, ge=0)
    backoff_initial: float = Field(default=0.5, ge=0)
    backoff_max: float = Field(default=8.0, ge=0)
    backoff_multiplier: float = Field(default=2.0, ge=1)
    retry_on_status: list[int] = Field(default_factory=lambda: [429, 500, 502, 503, 504, 529])
    retry_on_timeout: bool = True
    fallback_models: list[str] = Field(default_factory=list)
    retry_after_max: float = Field(default=60.0, ge=0)
    deadline: float | None = Field(default=None, gt=0)

    def backoff(self, retry: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number `retry` (0-based): the server's `retry_after` when
        it gave one (None when that is more than `retry_after_max`: not worth a retry), else the
        exponential backoff, never more than `backoff_max`."""
        if retry_after is not None:
            return max(0.0, retry_after) if retry_after <= self.retry_after_max else None
        return min(self.backoff_max, self.backoff_initial * self.backoff_multiplier**retry)


class ReActConfig(BaseModel):
    """Everything a ReAct loop needs besides its model client and tools.

    Defaults are read from `get_config()` when an instance is created, so a
    `jianmu.yaml` changes them without code changes.
    """

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default_factory=_setting("models.react"))
    temperature: float | None = Field(default_factory=_setting("llm.temperature"))
    max_tokens: int | None = Field(default_factory=_setting("llm.max_tokens"))
    max_completion_tokens: int | None = Field(default_factory=_setting("llm.max_completion_tokens"))
    top_p: float | None = Field(default_factory=_setting("llm.top_p"))
    top_k: int | None = Field(default_factory=_setting("llm.top_k"))
    timeout: float = Field(default_factory=_setting("llm.timeout"))
    max_budget_tokens: int | None = Field(default_factory=_setting("llm.max_budget_tokens"))
    max_iterations: int = Field(default_factory=_setting("limits.max_iterations"), ge=1)
    max_rounds: int | None = Field(default_factory=_setting("limits.max_rounds"), ge=1)
    """Rounds (model calls) of one run at most; the loop stops at `min(max_iterations, max_rounds)`."""
    resilience: ModelResilienceConfig = Field(default_factory=ModelResilienceConfig)
    system_prompt: str | None = None
    tool_choice: Any = None
    """Applies to the first round of each run only (retries and fallbacks of that round keep it)."""
    extra_params: dict[str, Any] = Field(default_factory=dict)
    keys: StateKeys = Field(default_factory=StateKeys)
    on_max_iterations: Literal["error", "return_observations", "final_answer"] = "error"
    max_iterations_hard_limit: int | None = Field(default=None, ge=1)
    """A cap set by the host; the agent's own `max_iterations` cannot raise it."""
    parallel_tool_calls: bool = True
    """False: the calls of a round run one by one, and the request asks the model for one call a
    round (`parallel_tool_calls: false`); set explicitly, the request carries it either way."""
    stream: bool = False

    @property
    def effective_max_iterations(self) -> int:
        caps = (self.max_iterations, self.max_rounds, self.max_iterations_hard_limit)
        return min(cap for cap in caps if cap is not None)


__all__ = [
    "CONFIG_ENV",
    "CONFIG_FILENAME",
    "ConfigError",
    "JianmuSettings",
    "LLMSettings",
    "LimitsSettings",
    "ModelResilienceConfig",
    "ModelsSettings",
    "ReActConfig",
    "USER_DIRS",
    "WritersSettings",
    "config_files",
    "get_config",
    "reset_config_cache",
    "user_config_file",
]
