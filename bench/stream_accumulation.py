"""How long an LLM node takes to stream a long reply into state (issue 13.5).

    .venv/bin/python bench/stream_accumulation.py [--deltas 4000] [--size 10000]

A provider streams `deltas` fragments of `size` characters each into a `SimpleLLMNode`
with `stream=True` (every fragment also goes out as a `text.delta` event). Printed side by
side, all measured in this run:

- baseline: the same provider feeding a bare list (no node, no state, no events);
- the node as it is (`streaming_output` written as the text grows by half, or 10 times a second);
- the node writing the whole text at every fragment, as before the fix: measured on a tenth
  of the deltas only (it is quadratic), and extrapolated to the full count.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from runtime import ModelClient, ReActConfig, ReactiveRunner, ReActState, human
from runtime.messages import ai
from runtime.model import ModelConfig, ModelResponse, Usage
from runtime.node import SimpleLLMNode


class Firehose:
    """A provider that streams `deltas` fragments of `size` characters as fast as it can."""

    def __init__(self, deltas: int, size: int):
        self.fragment = "x" * (size - 1) + " "
        self.deltas = deltas

    async def complete(self, messages, config: ModelConfig, on_delta=None) -> ModelResponse:
        for _ in range(self.deltas):
            on_delta(self.fragment)
        text = self.fragment * self.deltas
        return ModelResponse(message=ai(text), usage=Usage(total_tokens=1), model="firehose")


class RewritingNode(SimpleLLMNode):
    """The node before the fix: the whole text rebuilt and written at every delta."""

    def _stream_to_state(self, delta: str) -> None:
        self._old = getattr(self, "_old", "") + delta
        self.write_state({self.key_for("streaming_output"): self._old}, signal=False)


async def through_node(node_type: type[SimpleLLMNode], deltas: int, size: int) -> float:
    node = node_type("ask", model_client=ModelClient(Firehose(deltas, size)), config=ReActConfig(stream=True))
    runner = ReactiveRunner(node, ReActState)
    started = time.perf_counter()
    await runner.run(input_data={"messages": [human("go")]})
    elapsed = time.perf_counter() - started
    assert len(runner.state_manager.get("streaming_output")) == deltas * size
    return elapsed


async def bare(deltas: int, size: int) -> float:
    parts: list[str] = []
    started = time.perf_counter()
    await Firehose(deltas, size).complete([], ModelConfig(), parts.append)
    "".join(parts)
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=4000)
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args()
    tenth = args.deltas // 10
    rows = [
        ("baseline: provider into a list", tenth, await bare(tenth, args.size)),
        ("SimpleLLMNode, stream=True (now)", tenth, await through_node(SimpleLLMNode, tenth, args.size)),
        ("whole text written per delta (before)", tenth, await through_node(RewritingNode, tenth, args.size)),
        ("baseline: provider into a list", args.deltas, await bare(args.deltas, args.size)),
        ("SimpleLLMNode, stream=True (now)", args.deltas, await through_node(SimpleLLMNode, args.deltas, args.size)),
    ]
    print(f"fragments of {args.size:,} characters")
    print(f"{'configuration':40} {'deltas':>7} {'seconds':>9} {'x baseline':>11}")
    for label, deltas, seconds in rows:
        base = next(s for name, d, s in rows if d == deltas and name.startswith("baseline"))
        print(f"{label:40} {deltas:7} {seconds:9.3f} {seconds / base:11.1f}")
    before = rows[2][2] * (args.deltas / tenth) ** 2
    print(f"before, extrapolated to {args.deltas} deltas (quadratic): about {before:.0f} s")


if __name__ == "__main__":
    asyncio.run(main())
