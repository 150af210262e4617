"""OpenTelemetry GenAI traces, received as a collector receives them: runs in a subprocess export over
OTLP/HTTP to a loopback receiver (otlp_receiver.py) that decodes the real protobuf messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from otlp_receiver import OTLPReceiver, ReceivedSpan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
UNSET = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
         "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_SDK_DISABLED", "JIANMU_OTEL_SPANS")


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT), **extra}


def cli(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "studio.cli", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=environment(tmp_path, **env), timeout=120)


def traced(tmp_path: Path, *args: str, **env: str) -> tuple[list[ReceivedSpan], subprocess.CompletedProcess]:
    with OTLPReceiver() as receiver:
        result = cli(tmp_path, *args, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, **env)
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert set(receiver.content_types) == {"application/x-protobuf"}
    return receiver.spans, result


def tree_of(spans: list[ReceivedSpan], parent: str = "") -> list:
    """[(name, [children...]), ...] in start order: the shape a trace viewer draws."""
    children = sorted((s for s in spans if s.parent_id == parent), key=lambda s: (s.start, s.name))
    return [(s.name, tree_of(spans, s.span_id)) for s in children]


def one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def parent_of(spans: list[ReceivedSpan], span: ReceivedSpan) -> ReceivedSpan:
    return next(s for s in spans if s.span_id == span.parent_id)


def test_a_run_exports_one_trace_nested_as_the_tree_ran(tmp_path):
    spans, result = traced(tmp_path, "run", "react_calculator", "--db", "runs.db")
    assert result.returncode == 0, result.stderr
    assert len({s.trace_id for s in spans}) == 1
    assert tree_of(spans) == [("invoke_agent Calculator", [("Calculator", [
        ("Calculator.loop", [("Calculator.llm", [("chat scripted", [])]),
                             ("Calculator.tools", [("execute_tool calculator", [])])]),
        ("Calculator.loop", [("Calculator.llm", [("chat scripted", [])]), ("Calculator.tools", [])]),
    ])])]
    run = one(spans, "invoke_agent Calculator")
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "Calculator" and run.service == "jianmu"
    assert run.status_code != 2  # not ERROR
    first, second = sorted((s for s in spans if s.operation == "chat"), key=lambda s: s.start)
    assert first.kind == 3  # SPAN_KIND_CLIENT
    assert first.attributes["gen_ai.request.model"] == "scripted"
    assert (first.attributes["gen_ai.usage.input_tokens"], first.attributes["gen_ai.usage.output_tokens"]) == (163, 8)
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    tool = one(spans, "execute_tool calculator")
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert (tool.attributes["gen_ai.tool.name"], tool.attributes["gen_ai.tool.call.id"]) == ("calculator", "call_1")
    assert all(run.start <= s.start and s.end <= run.end for s in spans)
    said = [key for s in spans for key in s.attributes
            if key in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                       "gen_ai.tool.call.result")]
    assert said == []  # contents only with the opt-in


def test_message_contents_only_with_the_conventions_opt_in(tmp_path):
    spans, result = traced(tmp_path, "run", "react_calculator", "--db", "runs.db",
                           OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    assert result.returncode == 0, result.stderr
    first = min((s for s in spans if s.operation == "chat"), key=lambda s: s.start)
    sent = json.loads(first.attributes["gen_ai.input.messages"])
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "What is 25 * 4 + 10?"}]}
    answer = json.loads(first.attributes["gen_ai.output.messages"])[0]
    assert answer["role"] == "assistant" and answer["finish_reason"] == "tool_calls"
    assert answer["parts"][-1]["type"] == "tool_call" and answer["parts"][-1]["name"] == "calculator"
    tool = one(spans, "execute_tool calculator")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"expression": "25 * 4 + 10"}
    assert tool.attributes["gen_ai.tool.call.result"] == "110"


def test_mcp_client_spans_nest_under_their_tool_span(tmp_path):
    spans, result = traced(tmp_path, "run", "mcp_tools", "--db", "runs.db")
    assert result.returncode == 0, result.stderr
    for tool in ("lookup_capital", "word_count"):
        sent = one(spans, f"MCP send tools/call {tool}")
        assert sent.scope == "mcp-python-sdk"
        assert parent_of(spans, sent).name == f"execute_tool {tool}"
        assert parent_of(spans, parent_of(spans, sent)).name == "MCPAgent.tools"


def test_a_failing_tool_call_is_an_error_span(tmp_path):
    spans, result = traced(tmp_path, "run", "flaky_tools", "--db", "runs.db")
    failed = [s for s in spans if s.operation == "execute_tool" and s.status_code == 2]
    assert failed and all(s.attributes["error.type"] == "ToolError" for s in failed)
    assert any(s.operation == "execute_tool" and s.status_code != 2 for s in spans)  # the retry that worked


def test_tick_spans_when_configured(tmp_path):
    spans, result = traced(tmp_path, "run", "react_calculator", "--db", "runs.db", JIANMU_OTEL_SPANS="ticks")
    assert result.returncode == 0, result.stderr
    shape = tree_of(spans)
    assert shape[0][0] == "invoke_agent Calculator"
    below = [name for name, _ in shape[0][1]]
    assert below.count("chat scripted") == 2 and "execute_tool calculator" in below
    assert [name for name in below if name.startswith("tick")] == [f"tick {n}" for n in range(1, 7)]


def test_a_recorded_run_exports_the_same_trace_at_its_recorded_times(tmp_path):
    live, result = traced(tmp_path, "run", "react_calculator", "--db", "runs.db", "--json")
    assert result.returncode == 0, result.stderr
    run_id = json.loads(result.stdout.splitlines()[-1])["summary"]["run_id"]
    before = cli(tmp_path, "export", "runs.db", "--run", run_id, "--otlp")
    assert before.returncode == 2 and before.stderr.count("\n") == 1 and "OTEL_EXPORTER_OTLP_ENDPOINT" in before.stderr
    exported, result = traced(tmp_path, "export", "runs.db", "--run", run_id, "--otlp")
    assert result.returncode == 0, result.stderr
    assert tree_of(exported) == tree_of(live)
    assert {s.trace_id for s in exported}.isdisjoint({s.trace_id for s in live})  # a trace of its own
    times = lambda spans: sorted((s.name, s.start // 1000, s.end // 1000) for s in spans)  # noqa: E731 (µs)
    assert times(exported) == times(live)
    attributes = lambda spans: sorted(json.dumps(s.attributes, sort_keys=True) for s in spans)  # noqa: E731
    assert attributes(exported) == attributes(live)


def test_a_protocol_this_install_cannot_speak_is_one_line_and_the_run_goes_on(tmp_path):
    with OTLPReceiver() as receiver:
        result = cli(tmp_path, "run", "react_calculator", "--db", "runs.db",
                     OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    assert result.returncode == 0
    assert result.stderr.splitlines() == ["no OpenTelemetry traces: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this install "
                                          "exports traces over http/protobuf only; set that (the collector's HTTP "
                                          "port, usually 4318)"]
    assert receiver.spans == []


HOST_APPLICATION = """
import asyncio, json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
sys.path.insert(0, "sample_trees")
import text_pipeline

async def main():
    with trace.get_tracer("host").start_as_current_span("request"):
        await text_pipeline.build().run(text_pipeline.INPUT)

asyncio.run(main())
spans = exporter.get_finished_spans()
by_id = {s.context.span_id: s.name for s in spans}
print(json.dumps([[s.name, by_id.get(s.parent.span_id) if s.parent else None] for s in spans]))
"""


def test_a_host_applications_tracer_provider_gets_the_runs_under_its_own_span(tmp_path):
    result = subprocess.run([sys.executable, "-c", HOST_APPLICATION], capture_output=True, text=True, cwd=ROOT,
                            env=environment(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    parents = dict(map(tuple, json.loads(result.stdout)))
    agent = next(name for name in parents if name.startswith("invoke_agent"))
    assert parents[agent] == "request"


def test_without_the_variables_a_run_imports_no_opentelemetry(tmp_path):
    code = ("import asyncio, sys; sys.path.insert(0, 'sample_trees'); import react_calculator as t; "
            "asyncio.run(t.build().run(t.INPUT)); print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env=environment(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
