"""A tool that needs a human's approval before it runs.

The guard marks `send_email` as requiring confirmation: when the model asks for it, the
ToolExecutor stays RUNNING and the run is *suspended* until someone approves or denies
the call (in the studio: the approval dialog, `a`). Approve and the email "goes out";
deny with a reason and the model reads the refusal as the tool's observation.
"""

from runtime import Agent, ModelClient, ReActState, ScriptedProvider, create_react_node, human, tool


@tool(effect_tags=("external",))
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email (pretend: nothing leaves this machine)."""
    return f"email to {to} queued: {subject!r} ({len(body)} characters)"


SCRIPT = [
    {"tool_calls": [{"name": "send_email", "arguments": {
        "to": "ops@example.com", "subject": "Nightly build failed", "body": "Build 1234 failed at step 7."}}]},
    "I have notified ops@example.com about the failed nightly build.",
]

INPUT = {"messages": [human("Tell ops that the nightly build failed.")]}


def build() -> Agent:
    client = ModelClient.resolve(ScriptedProvider(SCRIPT), env_override=True)
    root = create_react_node(name="Notifier", model_client=client, tools=[send_email],
                             constraints={"require_confirmation": ["send_email"]})
    return Agent(root, state_schema=ReActState)
