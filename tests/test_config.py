import os
import re

import pytest

from runtime import Agent, CalculatorTool, ModelClient, RunContext, ScriptedProvider, create_react_node, human
from runtime.config import (
    ConfigError,
    JianmuSettings,
    ModelResilienceConfig,
    ReActConfig,
    config_files,
    get_config,
    reset_config_cache,
    user_config_file,
)
from runtime.state.keys import StateKeys

pytestmark = pytest.mark.usefixtures("no_config_file")  # every test starts with the built-in settings


def test_built_in_defaults():
    settings = get_config()
    assert settings == JianmuSettings()
    assert settings.limits.max_iterations == 10
    assert settings.limits.max_rounds is None and settings.limits.max_iterations_hard_limit is None
    assert settings.llm.temperature is None  # nothing sampling-related is sent unless configured
    assert settings.llm.timeout == 60.0
    assert settings.models.react is None

    config = ReActConfig()
    assert config.max_iterations == config.effective_max_iterations == 10
    assert config.temperature is None and config.top_k is None and config.max_completion_tokens is None
    assert config.timeout == 60.0
    assert config.model is None
    assert config.max_budget_tokens is None
    assert config.resilience == ModelResilienceConfig()
    assert config.keys == StateKeys()
    assert config.on_max_iterations == "error"
    assert config.parallel_tool_calls is True
    assert config.stream is False


def test_jianmu_yaml_in_the_working_directory_is_deep_merged(tmp_path):
    (tmp_path / "jianmu.yaml").write_text("llm:\n  temperature: 0.7\nlimits:\n  max_iterations: 4\n")

    settings = get_config()

    assert settings.llm.temperature == 0.7
    assert settings.llm.timeout == 60.0  # a sibling key keeps its default
    assert settings.limits.max_iterations == 4
    assert settings.limits.max_rounds is None
    assert ReActConfig().max_iterations == 4
    assert ReActConfig(max_iterations=2).max_iterations == 2


def test_jianmu_config_env_wins_over_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "jianmu.yaml").write_text("models:\n  react: local-model\n")
    other = tmp_path / "elsewhere.yaml"
    other.write_text("models:\n  default: base-model\n  react: react-model\nllm:\n  max_budget_tokens: 500\n")
    monkeypatch.setenv("JIANMU_CONFIG", str(other))

    config = ReActConfig()

    assert config.model == "react-model"
    assert config.max_budget_tokens == 500


def test_the_react_model_is_its_own_and_the_default_model_is_the_clients(tmp_path):
    """Seed 000: `ReActConfig.model` comes from `models.react`, independent of the default model;
    `models.default` names the model of a client built without one."""
    (tmp_path / "jianmu.yaml").write_text("models:\n  default: base-model\n")
    assert ReActConfig().model is None
    assert ModelClient(ScriptedProvider([])).model == "base-model"
    assert ModelClient(ScriptedProvider([]), model="chosen").model == "chosen"
    (tmp_path / "jianmu.yaml").write_text("models:\n  default: base-model\n  react: react-model\n")
    reset_config_cache()
    assert ReActConfig().model == "react-model"


async def test_the_default_model_reaches_the_request_when_no_react_model_is_set(tmp_path):
    (tmp_path / "jianmu.yaml").write_text("models:\n  default: base-model\n")
    scripted = ScriptedProvider(["hi"])
    await Agent(create_react_node(model_client=ModelClient(scripted))).run({"messages": [human("q")]})
    assert scripted.requests[0].config.model == "base-model"


def test_every_key_of_a_full_jianmu_yaml_is_honoured(tmp_path):
    """Each key reaches what it configures (a key nothing reads would be accepted and ignored)."""
    (tmp_path / "jianmu.yaml").write_text(
        "models: {default: d, react: r}\n"
        "llm: {temperature: 0.3, max_tokens: 100, max_completion_tokens: 90, top_p: 0.9, top_k: 40, timeout: 12,"
        " max_budget_tokens: 5000}\n"
        "limits: {max_iterations: 8, max_rounds: 6, max_iterations_hard_limit: 4}\n")
    config = ReActConfig()
    assert (config.model, config.temperature, config.max_tokens, config.max_completion_tokens, config.top_p,
            config.top_k, config.timeout, config.max_budget_tokens, config.max_iterations, config.max_rounds) == (
        "r", 0.3, 100, 90, 0.9, 40, 12, 5000, 8, 6)
    assert config.effective_max_iterations == 6  # max_rounds caps the rounds below max_iterations
    assert ModelClient(ScriptedProvider([])).model == "d"
    assert RunContext().max_iterations_hard_limit == 4  # the host's cap on every loop of a run


async def test_limits_max_rounds_stops_a_react_loop_after_that_many_rounds(tmp_path):
    (tmp_path / "jianmu.yaml").write_text("limits:\n  max_rounds: 2\n")
    again = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1 + 1"}}]}
    scripted = ScriptedProvider([again] * 5)
    root = create_react_node(model_client=ModelClient(scripted), tools=[CalculatorTool()])
    result = await Agent(root).run({"messages": [human("loop forever")]})
    assert (result.termination_reason, result.state.rounds, len(scripted.requests)) == ("max_iterations", 2, 2)


def test_cache_follows_the_file_modification_time(tmp_path):
    path = tmp_path / "jianmu.yaml"
    path.write_text("limits:\n  max_iterations: 3\n")
    first = get_config()
    assert get_config() is first

    path.write_text("limits:\n  max_iterations: 5\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))

    assert get_config().limits.max_iterations == 5


def test_empty_file_means_defaults(tmp_path):
    (tmp_path / "jianmu.yaml").write_text("# nothing yet\n")
    assert get_config() == JianmuSettings()


def test_bad_yaml_names_the_file_and_line(tmp_path):
    path = tmp_path / "jianmu.yaml"
    path.write_text("llm:\n  temperature: [0.2\n")

    with pytest.raises(ConfigError) as info:
        get_config()

    message = str(info.value)
    assert str(path) in message and "invalid YAML" in message and "line" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("llm:\n  temprature: 0.3\n", "llm.temprature"),
        ("limits:\n  max_iterations: zero\n", "limits.max_iterations"),
        ("limits:\n  max_iterations: 0\n", "limits.max_iterations"),
        ("model:\n  react: x\n", "model"),
    ],
)
def test_unknown_or_invalid_field_names_the_file_and_field(tmp_path, text, field):
    (tmp_path / "jianmu.yaml").write_text(text)

    with pytest.raises(ConfigError) as info:
        ReActConfig()

    message = str(info.value)
    assert "jianmu.yaml" in message and f"invalid setting {field}:" in message
    assert "\n" not in message


def test_top_level_must_be_a_mapping(tmp_path):
    (tmp_path / "jianmu.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="jianmu.yaml: expected a mapping"):
        get_config()


def test_missing_file_named_by_env_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("JIANMU_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(ConfigError, match="nope.yaml: no such config file"):
        get_config()


@pytest.mark.parametrize(("own", "cap", "effective"), [(10, None, 10), (10, 3, 3), (2, 5, 2)])
def test_host_hard_limit_caps_max_iterations(own, cap, effective):
    config = ReActConfig(max_iterations=own, max_iterations_hard_limit=cap)
    assert config.effective_max_iterations == effective


def test_react_config_rejects_unknown_fields():
    with pytest.raises(ValueError, match="max_iteration"):
        ReActConfig(max_iteration=3)


def test_backoff_grows_exponentially_up_to_the_cap():
    resilience = ModelResilienceConfig(backoff_initial=0.5, backoff_multiplier=2.0, backoff_max=3.0)
    assert [resilience.backoff(n) for n in range(4)] == [0.5, 1.0, 2.0, 3.0]


def test_the_user_file_then_the_working_directorys_then_jianmu_config_each_win_key_by_key(tmp_path, monkeypatch):
    """#31.6: jianmu.yaml in the user config directory, then ./jianmu.yaml, then $JIANMU_CONFIG (later wins)."""
    user = user_config_file()
    assert user == tmp_path / "config/jianmu-studio/jianmu.yaml"  # (conftest: this test's own config home)
    user.parent.mkdir(parents=True)
    user.write_text("models:\n  default: user-model\n  react: user-react\nllm:\n  temperature: 0.1\n"
                    "limits:\n  max_rounds: 3\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert (ReActConfig().model, ReActConfig().temperature, get_config().limits.max_rounds) == ("user-react", 0.1, 3)
    (work / "jianmu.yaml").write_text("models:\n  react: local-react\nllm:\n  temperature: 0.5\n")
    assert (ReActConfig().model, ReActConfig().temperature, get_config().models.default) == \
        ("local-react", 0.5, "user-model")
    named = tmp_path / "named.yaml"
    named.write_text("llm:\n  temperature: 0.9\n")
    monkeypatch.setenv("JIANMU_CONFIG", str(named))
    settings = get_config()
    assert (settings.llm.temperature, settings.models.react, settings.models.default, settings.limits.max_rounds) == \
        (0.9, "local-react", "user-model", 3)
    assert config_files() == [user, work / "jianmu.yaml", named]


def test_an_error_names_the_file_it_is_in_or_the_files_that_clash(tmp_path, monkeypatch):
    user = user_config_file()
    user.parent.mkdir(parents=True)
    user.write_text("limits:\n  max_rounds: many\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(user))}: invalid setting limits.max_rounds:"):
        get_config()
    user.write_text("writers:\n  heartbeat: 30\n")  # fine alone, and so is ./jianmu.yaml: not together
    (tmp_path / "jianmu.yaml").write_text("writers:\n  abandoned_after: 20\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(tmp_path / 'jianmu.yaml'))} over {re.escape(str(user))}: "
                                          r"invalid setting writers: .*must be longer than heartbeat"):
        get_config()
