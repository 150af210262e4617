"""The debug server seen from outside: an agent in its own process, a debugger attaching to it.

Each test starts `tests/debug_target.py` (a sample tree with the scripted model, served on
a free loopback port) and speaks the protocol to it with `DebugClient` or a raw WebSocket.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys

import pytest
from debug_fixtures import LLM, ROOT, TOKEN, agent_process, until
from websockets.asyncio.client import connect

from runtime.debug import PROTOCOL_VERSION, DebugClient, DebugError
from runtime.debug.protocol import MAX_MESSAGE


async def test_before_breakpoint_pauses_the_llm_node_and_a_state_edit_reaches_the_run():
    async with agent_process() as target:
        client = await DebugClient.connect(target.address, TOKEN)
        assert LLM in [node["path"] for node in client.welcome["tree"]]
        assert client.welcome["state"][""]["messages"] == []  # attached before the run started
        await until(client, "paused")  # a client that came during the wait finds the run held at its start
        await client.request("break", kind="node", node=LLM, when="before")
        await client.request("continue")
        paused = await until(client, "paused")
        assert (paused["node"], paused["when"], paused["tick"]) == (LLM, "before", 1)
        await client.request("edit_state", key="messages", value=[{"role": "user", "content": "What is 2 + 2?"}])
        await client.request("unbreak", breakpoint=1)
        await client.request("continue")
        assert (await until(client, "finished"))["status"] == "SUCCESS"
        result = await target.result()
    assert result["status"] == "SUCCESS"
    assert result["first_message"] == "What is 2 + 2?"  # the model saw the edited state


async def test_updates_are_diffs_that_rebuild_the_run_from_the_welcome():
    async with agent_process() as target:
        client = await DebugClient.connect(target.address, TOKEN)
        statuses = {node["path"]: node["status"] for node in client.welcome["tree"]}
        state = {ns: dict(values) for ns, values in client.welcome["state"].items()}
        await until(client, "paused")
        await client.request("continue")
        sent, ticks = 0, 0
        while (message := await client.next_message()) is not None:
            if message["type"] != "update":
                continue
            assert "tree" not in message  # the shape came once, in the welcome
            for path, (old, new) in message.get("nodes", {}).items():
                assert statuses[path] == old  # each status change follows the last one sent
                statuses[path] = new
            for namespace, key, value in message.get("state", []):
                state.setdefault(namespace, {})[key] = value
            sent += len(message.get("state", []))
            ticks = message["tick"]
        assert (await target.result())["status"] == "SUCCESS"
    assert set(statuses.values()) == {"SUCCESS"}
    assert state[""]["final_answer"] == "25 * 4 + 10 = 110" and len(state[""]["messages"]) == 4
    assert sent < ticks * len(state[""])  # never the whole state per tick


async def test_wrong_or_missing_token_is_refused_and_logged_without_the_token():
    async with agent_process(wait=0.5) as target:
        with pytest.raises(DebugError, match="auth"):
            await DebugClient.connect(target.address, "not-the-token-at-all")
        with pytest.raises(DebugError, match="auth"):
            await DebugClient.connect(target.address, "")
        result = await target.result()
    assert result["status"] == "SUCCESS"  # nobody attached: the run went on at once
    log = "".join(target.stderr)
    assert "refused: wrong token" in log and "refused: no token" in log
    assert "not-the-token-at-all" not in log and TOKEN not in log


async def test_a_generated_token_is_printed_once_and_works():
    async with agent_process(token=None) as target:
        token = re.search(r"token (\S+)", target.stderr[0])[1]
        client = await DebugClient.connect(target.address, token)
        await until(client, "paused")
        await client.request("continue")
        assert (await target.result())["status"] == "SUCCESS"
    assert "".join(target.stderr).count(token) == 1


async def test_a_second_client_is_refused_while_one_is_attached():
    async with agent_process() as target:
        first = await DebugClient.connect(target.address, TOKEN)
        with pytest.raises(DebugError, match="busy"):
            await DebugClient.connect(target.address, TOKEN)
        await until(first, "paused")
        await first.request("continue")
        assert (await target.result())["status"] == "SUCCESS"


CLIENT = """
import asyncio, sys
from runtime.debug import DebugClient

async def main():
    client = await DebugClient.connect(sys.argv[1], sys.argv[2], heartbeat=0.5)
    await client.request("break", kind="node", node=sys.argv[3], when="before")
    await client.request("break", kind="event", event="tool.call.started")
    await client.request("continue")
    while (message := await client.next_message())["type"] != "paused" or message.get("when") != "before":
        pass
    print("paused", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("how", ["killed", "stopped"])
async def test_a_client_that_dies_or_stops_answering_while_paused_releases_the_agent(how):
    async with agent_process(heartbeat=0.5) as target:
        client = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CLIENT, target.address, TOKEN, LLM, cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=asyncio.subprocess.PIPE)
        try:
            assert (await asyncio.wait_for(client.stdout.readline(), 60)).strip() == b"paused"
            client.send_signal(signal.SIGKILL if how == "killed" else signal.SIGSTOP)
            result = await target.result()  # the held run goes on by itself, its breakpoints gone
        finally:
            if client.returncode is None:
                client.kill()
            await client.wait()
    assert result["status"] == "SUCCESS"


async def test_bad_messages_get_errors_and_the_run_goes_on():
    async with agent_process() as target:
        host, port = target.address.split(":")
        async with connect(f"ws://{host}:{port}", max_size=None) as ws:
            await ws.send(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION, "token": TOKEN}))
            assert json.loads(await ws.recv())["type"] == "welcome"

            async def answer(frame: str | bytes) -> dict:
                await ws.send(frame)
                while (message := json.loads(await ws.recv()))["type"] not in ("error", "ok"):
                    pass
                return message

            assert (await answer("{not json"))["code"] == "bad_json"
            assert (await answer("[1, 2]"))["code"] == "bad_message"
            assert (await answer(json.dumps({"type": "warp", "id": 7})))["code"] == "unknown_type"
            assert (await answer(json.dumps({"type": "break", "id": 8})))["code"] == "bad_message"
            assert (await answer(json.dumps({"type": "hello", "protocol": 1, "token": TOKEN})))["code"] == "unknown_type"
            too_big = await answer(json.dumps({"type": "ping", "pad": "x" * (MAX_MESSAGE + 1)}))
            assert too_big["code"] == "too_large"
            nowhere = await answer(json.dumps({"type": "break", "id": 9, "kind": "node", "node": "no/such"}))
            assert (nowhere["code"], nowhere["re"]) == ("bad_request", 9)
            condition = await answer(json.dumps({"type": "break", "kind": "condition", "condition": "__import__('os')"}))
            assert condition["code"] == "bad_request" and "may be called" in condition["message"]
            assert (await answer(json.dumps({"type": "ping", "id": 10})))["type"] == "ok"  # still served
            await answer(json.dumps({"type": "continue"}))
        assert (await target.result())["status"] == "SUCCESS"


async def test_an_older_protocol_version_is_told_so():
    async with agent_process(wait=0.5) as target:
        host, port = target.address.split(":")
        async with connect(f"ws://{host}:{port}") as ws:
            await ws.send(json.dumps({"type": "hello", "protocol": PROTOCOL_VERSION - 1, "token": TOKEN}))  # 3
            reply = json.loads(await ws.recv())
        assert reply["code"] == "version" and f"speaks {PROTOCOL_VERSION}" in reply["message"]
        assert (await target.result())["status"] == "SUCCESS"
