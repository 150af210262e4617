"""Issue 13.3: the API key never lands in what a run prints, traces or stores (nor, #32.6, a
password in the endpoint's URL).

A canary key goes through the CLI (`jianmu-studio run` a sample against a loopback
server) over every error path: a refused connection, a key pasted with a newline (once an
illegal header quoting it), a 401 echoing it, a server echoing it in part or escaped.
Then every output and file is searched, the store's compressed blobs decompressed, for
the key and for any 12 characters of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import sys
import urllib.parse
import zlib
from pathlib import Path

import pytest
from openai_server import completion, delta_chunk, json_reply, sse_reply

from runtime.messages import human
from runtime.model import ModelConfig, ModelConfigurationError, ModelHTTPError, OpenAICompatibleProvider
from runtime.model.secrets import HOLD_FROM, Redactor, checked_api_key

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_trees" / "react_calculator.py"
CANARY = "sk-canary-9F3a7Q1x5B2w4K6m8Z0e"
LIMIT = 60


def leaks(data: bytes | str) -> list[str]:
    """The key, or any 12-character piece of it, found in `data`."""
    text = data.decode("latin-1") if isinstance(data, bytes) else data
    pieces = {CANARY[i : i + 12] for i in range(len(CANARY) - 11)}
    return sorted(piece for piece in pieces if piece in text)


def store_texts(db: Path) -> list[bytes]:
    """Every value of every table of the store, zlib blobs decompressed."""
    found: list[bytes] = []
    with sqlite3.connect(db) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        with contextlib.suppress(zlib.error):
                            value = zlib.decompress(value)
                        found.append(value)
                    elif value is not None:
                        found.append(str(value).encode())
    return found


def echo(transform):
    """A 401 whose body repeats (a transform of) the key the request carried."""
    async def reply(request, writer):
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        await json_reply({"error": {"message": f"invalid api key {transform(key)}"}}, 401)(request, writer)

    return lambda request: reply


ECHOES = {
    "401 echo": echo(lambda key: key),
    "partial echo": echo(lambda key: key[:-1]),
    "json-escaped echo": echo(lambda key: json.dumps(key)[1:-1].replace("-", "\\u002d")),
    "url-encoded echo": echo(lambda key: urllib.parse.quote(key, safe="")),
}


async def run_cli(tmp_path: Path, base_url: str, key: str) -> tuple[int, bytes, bytes, list[bytes]]:
    env = {**os.environ, "JIANMU_BASE_URL": base_url, "JIANMU_API_KEY": key, "JIANMU_MODEL": "m"}
    db, trace = tmp_path / "runs.db", tmp_path / "trace.jsonl"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "studio.cli", "run", str(SAMPLE), "--db", str(db), "--trace", str(trace),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=tmp_path)
    async with asyncio.timeout(LIMIT):
        out, err = await process.communicate()
    files = [path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()]
    if db.exists():
        files.extend(store_texts(db))
    return process.returncode, out, err, files


@pytest.mark.parametrize("case", sorted(ECHOES))
async def test_a_server_echoing_the_key_never_gets_it_recorded(tmp_path, server, case):
    server.responder = ECHOES[case]
    code, out, err, files = await run_cli(tmp_path, server.url, CANARY + "\n")  # pasted with a newline
    assert server.requests and server.requests[0].headers["authorization"] == f"Bearer {CANARY}"
    assert code == 1 and b"HTTP 401" in out + err + b"".join(files)
    assert leaks(out) == leaks(err) == [] and [leaks(f) for f in files if leaks(f)] == []


async def test_a_successful_answer_repeating_the_key_is_recorded_and_printed_without_it(tmp_path, server):
    def answer(request):
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        return json_reply(completion(f"The key you sent is {key}; done.", model=f"proxy-{key}"))

    server.responder = answer
    code, out, err, files = await run_cli(tmp_path, server.url, CANARY)
    assert code == 0 and b"final answer: The key you sent is ***; done." in out, out + err
    assert leaks(out) == leaks(err) == [] and [leaks(f) for f in files if leaks(f)] == []


URL_PASSWORD = "Pw-canary-3xQ9"


@pytest.mark.parametrize("server_up", [True, False], ids=["echoed by the server", "refused"])
async def test_a_password_in_the_base_url_never_shows_nor_is_recorded(tmp_path, server, server_up):
    """#32.6: `JIANMU_BASE_URL=http://user:pass@host/v1` is masked wherever the URL is shown."""
    def echo_the_url(request):
        return json_reply({"error": {"message": f"upstream http://alice:{URL_PASSWORD}@10.0.0.1/v1 is down"}}, 502)

    server.responder = echo_the_url
    if not server_up:
        await server.stop()
    url = server.url.replace("http://", f"http://alice:{URL_PASSWORD}@")
    code, out, err, files = await run_cli(tmp_path, url, CANARY)
    assert code == 1 and b"alice:***@" in err, err
    assert [text for text in (out, err, *files) if URL_PASSWORD.encode() in text] == []


@pytest.mark.parametrize("size", [1, 3, 5])  # a model's tokens are a few characters
async def test_a_streamed_key_split_into_small_deltas_is_masked_as_it_streams(server, size):
    pieces = [CANARY[i : i + size] for i in range(0, len(CANARY), size)]
    server.script(sse_reply([delta_chunk({"content": "key: "}), *(delta_chunk({"content": p}) for p in pieces),
                             delta_chunk({"content": " (end)"}, finish_reason="stop")]))
    provider = OpenAICompatibleProvider(server.url, CANARY, default_model="m")
    deltas: list[str] = []
    response = await provider.complete([human("q")], ModelConfig(stream=True), on_delta=deltas.append)
    await provider.aclose()
    streamed = "".join(deltas)
    assert response.message.content == "key: *** (end)" and not any(leaks(delta) for delta in deltas)
    shown = streamed.removeprefix("key: ").removesuffix("*** (end)")  # what of the key passed before the mask
    assert CANARY.startswith(shown) and len(shown) < HOLD_FROM and len(deltas) > 2, deltas


def test_ordinary_streamed_text_passes_as_it_came():
    deltas: list[str] = []
    feed, flush = Redactor(CANARY).holding_back(deltas.append)
    for delta in ["Hel", "lo, ", "world"]:
        feed(delta)
    flush()
    assert deltas == ["Hel", "lo, ", "world"]


def test_scrub_returns_the_same_object_when_the_key_is_not_there():
    answer = {"message": {"content": "hello", "tool_calls": [{"arguments": {"q": "x"}}]}, "model": "m"}
    assert Redactor(CANARY).scrub(answer) is answer
    dirty = {**answer, "model": f"m-{CANARY}"}
    assert Redactor(CANARY).scrub(dirty) == {**answer, "model": "m-***"}


async def test_a_refused_connection_never_records_the_key(tmp_path, server):
    url = server.url
    await server.stop()
    code, out, err, files = await run_cli(tmp_path, url, f"  {CANARY}\r\n")
    assert code == 1 and b"cannot reach" in out + err + b"".join(files)
    assert leaks(out) == leaks(err) == [] and [leaks(f) for f in files if leaks(f)] == []


async def test_a_key_with_a_control_character_is_refused_in_one_line_without_it(tmp_path, server):
    code, out, err, files = await run_cli(tmp_path, server.url, CANARY[:12] + "\x07" + CANARY[12:])
    assert code != 0 and server.requests == []
    lines = (out + err).decode().strip().splitlines()
    assert len(lines) == 1
    assert f"control character (U+0007 at position 13 of {len(CANARY) + 1}); the key is not shown" in lines[0]
    assert leaks(out) == leaks(err) == [] and [leaks(f) for f in files if leaks(f)] == []


# -- the pieces, directly ---------------------------------------------------------------------
def test_keys_are_stripped_and_bad_ones_refused():
    assert checked_api_key(f" {CANARY}\n") == CANARY and checked_api_key("  ") is None
    with pytest.raises(ModelConfigurationError, match="non-ASCII") as info:
        OpenAICompatibleProvider("http://127.0.0.1:1/v1", CANARY + "é")
    assert not leaks(str(info.value))


@pytest.mark.parametrize("text", [
    f"key={CANARY}", f"key={CANARY[:-1]}", f"key={CANARY[1:]}", f"'{CANARY[5:25]}'",
    json.dumps({"k": CANARY}), urllib.parse.quote(CANARY, safe=""), repr(CANARY.encode()),
])
def test_redaction_covers_escaped_forms_and_long_fragments(text):
    redacted = Redactor(CANARY)(text)
    assert not leaks(redacted) and "***" in redacted


def test_redaction_leaves_other_text_alone():
    assert Redactor(CANARY)("model endpoint answered HTTP 401: invalid sk-other-key") == (
        "model endpoint answered HTTP 401: invalid sk-other-key")


async def test_an_error_quoting_part_of_the_key_is_redacted(server):
    provider = OpenAICompatibleProvider(server.url, CANARY, default_model="m")
    server.script(json_reply({"error": f"quota exceeded for {CANARY[:-2]}"}, 429), json_reply(completion("ok")))
    with pytest.raises(ModelHTTPError) as info:
        await provider.complete([human("q")], ModelConfig())
    assert "quota exceeded for ***" in str(info.value) and not leaks(str(info.value))
    await provider.aclose()
