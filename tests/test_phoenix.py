"""A run's trace read back from a real consumer: Arize Phoenix (phoenix_server.py), started on loopback,
receives a run over OTLP/HTTP and shows it as a tree of agent, LLM and tool spans through its API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from phoenix_server import PhoenixServer, install
from waiting import wait_for

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def test_phoenix_shows_a_run_as_its_tree(tmp_path):
    if reason := install():
        pytest.skip(reason)
    with PhoenixServer(tmp_path) as phoenix:
        wait_for(phoenix.healthy, "Phoenix to answer", limit=300)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.url,
               "XDG_CACHE_HOME": str(tmp_path / "cache")}
        run = subprocess.run([sys.executable, "-m", "studio.cli", "run", "react_calculator", "--db", "runs.db"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        spans = wait_for(lambda: len(phoenix.spans()) >= 11 and phoenix.spans(), "the run's 11 spans in Phoenix")
    by_id = {span["context"]["span_id"]: span for span in spans}

    def parent(span):
        return by_id.get(span["parent_id"]) if span.get("parent_id") else None

    agent = next(span for span in spans if span["name"] == "invoke_agent Calculator")
    assert parent(agent) is None and agent["span_kind"] == "AGENT"
    assert {span["context"]["trace_id"] for span in spans} == {agent["context"]["trace_id"]}
    chats = sorted((span for span in spans if span["name"] == "chat scripted"), key=lambda span: span["start_time"])
    assert [span["span_kind"] for span in chats] == ["LLM", "LLM"]
    assert chats[0]["attributes"]["llm.token_count.prompt"] == 163  # Phoenix's reading of gen_ai.usage.*
    assert [parent(span)["name"] for span in chats] == ["Calculator.llm", "Calculator.llm"]
    tool = next(span for span in spans if span["name"] == "execute_tool calculator")
    assert tool["span_kind"] == "TOOL" and parent(tool)["name"] == "Calculator.tools"
    chain = []
    while tool is not None:
        chain.append(tool["name"])
        tool = parent(tool)
    assert chain == ["execute_tool calculator", "Calculator.tools", "Calculator.loop", "Calculator",
                     "invoke_agent Calculator"]
