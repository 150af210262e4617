"""A URL's credentials never show (#32.6): `runtime.urls.masked_url` is the one function every place
that shows or stores a URL uses. The model endpoint and the PostgreSQL store have their own tests
(test_model_secrets.py, test_store_naming.py); here an MCP server's URL and command line, and the
function itself on URLs no parser reads."""

from __future__ import annotations

import sys

import pytest
from test_cli import cli

from runtime.tools import MCPToolProvider, ToolError
from runtime.urls import masked_traceback, masked_url, url_secrets

SECRET = "Pw-canary-7"


async def test_an_mcp_servers_url_and_command_line_show_no_password():
    provider = MCPToolProvider(url=f"http://alice:{SECRET}@127.0.0.1:1/mcp", connect_timeout=10)
    with pytest.raises(ToolError) as refused:
        await provider.initialize()
    shown = [str(refused.value), provider.label, repr(provider)]
    assert not [text for text in shown if SECRET in text] and "alice:***@127.0.0.1:1/mcp" in shown[0]
    command = MCPToolProvider(sys.executable, ["-c", "", f"--db=postgresql://bob:{SECRET}@db/x"])
    assert SECRET not in command.label and "bob:***@db/x" in command.label


@pytest.mark.parametrize("text", [
    f"http://alice:{SECRET}@host/v1",
    f"cannot reach postgresql://u:{SECRET}@[::1/db (end of string)",  # no parser reads it
    f"postgresql://u:{SECRET}@more@host:notaport/db",  # an @ in the password
    f"https://host/v1?api_key={SECRET}&q=1",
    f"postgresql://host/db?sslpassword={SECRET}",
    f'"wss://:{SECRET}@host/debug"',
    f"cannot reach alice:{SECRET}@host/v1/chat/completions: missing an 'http://' protocol",  # no scheme
])
def test_every_password_and_secret_parameter_is_masked(text):
    assert SECRET not in masked_url(text) and "***" in masked_url(text)
    assert SECRET in url_secrets(text)


def test_urls_without_credentials_are_left_as_they_are():
    for text in ("http://host:8080/v1/chat/completions", "postgresql://alice@host/db", "a = 1; b = 2",
                 "https://host/search?q=key&page=2"):
        assert masked_url(text) == text


def test_a_traceback_masks_the_urls_its_messages_quote():
    """`--debug` prints tracebacks: a message in one (a cause's too) may quote the URL it failed on."""
    try:
        try:
            raise OSError(f"cannot reach http://alice:{SECRET}@host/v1")
        except OSError as exc:
            raise RuntimeError(f"store postgresql://bob:{SECRET}@db/x failed") from exc
    except RuntimeError as exc:
        shown = masked_traceback(exc)
    assert SECRET not in shown and "alice:***@host" in shown and "bob:***@db" in shown and "Traceback" in shown


@pytest.mark.parametrize("debug", [(), ("--debug",)])
def test_the_cli_shows_no_password_in_its_notices_logs_or_tracebacks(tmp_path, debug):
    """A password in an address reaches neither the line, a runtime notice (`serve`'s warning that the
    server is reachable from other machines), a library's log record nor a traceback."""
    refused = cli("serve", "sample_trees/react_calculator.py", "--at", f"u:{SECRET}@127.0.0.1:0",
                  "--db", str(tmp_path / "s.db"), *debug)
    assert refused.returncode == 2 and SECRET not in refused.stderr + refused.stdout, refused.stderr
    assert "u:***@127.0.0.1" in refused.stderr
