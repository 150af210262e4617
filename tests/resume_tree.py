"""A tree whose one tool has a side effect a test can count, and needs approval first: the tree file
of the resume tests (another process builds it again from this file, as `resume` does).

`append_line` appends its text to the file $JIANMU_TEST_EFFECTS names: after the run, that file
has one line per time the tool really ran.
"""

import os
from pathlib import Path

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool

EFFECTS = "JIANMU_TEST_EFFECTS"
APPEND = {"tool_calls": [{"name": "append_line", "arguments": {"text": "payment 42 sent"}}]}
INPUT = {"messages": [human("Send payment 42.")]}


@tool(effect_tags=("external",))
def append_line(text: str) -> str:
    """Append a line to the ledger (a side effect that must happen exactly once)."""
    with Path(os.environ[EFFECTS]).open("a", encoding="utf-8") as ledger:
        ledger.write(text + "\n")
    return f"appended {text!r}"


def build() -> Agent:
    root = create_react_node(name="Payer", model_client=ModelClient(ScriptedProvider([APPEND, "Done: payment 42 sent."])),
                             tools=[append_line], constraints={"require_confirmation": ["append_line"]})
    return Agent(root, state_schema=ReActState)
