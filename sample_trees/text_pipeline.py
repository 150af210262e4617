"""A workflow of custom nodes: ports, bindings and namespaces, no model at all.

Normalises a text, counts its words in two namespaces side by side (each branch keeps
its own `words` key), and summarises. Shows: `bind()` routing logical ports to state
keys, `AsyncNode` work that wakes the runner when done, namespaced state, `@node`.
"""

from __future__ import annotations

import asyncio

from py_trees.common import ParallelPolicy, Status
from pydantic import BaseModel

from runtime import Agent
from runtime.node import AsyncNode, Log, Parallel, Sequence, node


class PipelineState(BaseModel):
    text: str = ""
    normalized_text: str = ""
    words: int = 0
    summary: str = ""


class NormalizeText(AsyncNode):
    """Lower-cases and collapses whitespace (pretends to be slow I/O)."""

    input_ports = ("source_text",)
    output_ports = ("normalized_text",)

    async def update_async(self) -> Status:
        await asyncio.sleep(0.2)
        raw = str(self.read_port("source_text", default=""))
        self.write_port("normalized_text", " ".join(raw.strip().lower().split()))
        return Status.SUCCESS


class CountWords(AsyncNode):
    """Counts words of its input port into its output port, in its own namespace."""

    input_ports = ("text",)
    output_ports = ("count",)

    def __init__(self, name: str, namespace: str, unique: bool = False):
        super().__init__(name=name, namespace=namespace)
        self.unique = unique

    async def update_async(self) -> Status:
        await asyncio.sleep(0.1)
        words = str(self.state_manager.get(self.resolve_input_port("text"))).split()
        self.write_port("count", len(set(words)) if self.unique else len(words))
        return Status.SUCCESS


@node(name="Summarise")
def summarise(state: dict) -> dict:
    """Reads both namespaces' counts through its ports and writes a one-line summary."""
    return {"words": state["all_words"],
            "summary": f"{state['all_words']} words, {state['unique_words']} unique: {state['normalized_text'][:40]}"}


def build() -> Agent:
    root = Sequence("TextPipeline", memory=True, children=[
        NormalizeText("Normalize").bind(inputs={"source_text": "text"}),
        Parallel("Count", policy=ParallelPolicy.SuccessOnAll(), children=[
            CountWords("AllWords", namespace="all").bind(inputs={"text": "normalized_text"},
                                                          outputs={"count": "words"}),
            CountWords("UniqueWords", namespace="unique", unique=True).bind(
                inputs={"text": "normalized_text"}, outputs={"count": "words"}),
        ]),
        summarise().bind(inputs={"all_words": "all.words", "unique_words": "unique.words"}),
        Log("Report", message="summary: {summary}"),
    ])
    return Agent(root, state_schema=PipelineState)


INPUT = {"text": "  The quick brown fox   jumps over the LAZY dog, the end  "}
