"""Skills: named, reusable subtrees with declared inputs and outputs, run by `SkillNode`.

    research = Skill("research", build=make_research_agent, inputs=("city",), outputs=("final_answer",))
    SkillNode("ResearchParis", research, inputs={"city": "city_a"}, outputs={"skill_result": "notes_a"})

A `SkillNode` compiles its own copy of the skill (`FlattenedAgentNode`), so the same skill
used twice runs in two namespaces that never collide. Each time the node is entered, every
declared input is read from the parent's state through the node's input bindings (port
name = input name) and written into the skill's namespace under the input's name. When the
subtree succeeds, the skill's result lands in the `skill_result` port (by default the
`StateKeys.skill_result` key, usually declared `Ephemeral(scope="run")`): the value of its
only declared output, or `{output: value}` when it declares several.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import py_trees
from py_trees.common import Status

from ..state import StateKeys
from .flattened import FlattenedAgentNode


class SkillInputError(LookupError):
    """A declared input of a skill reads a state key that holds nothing."""


@dataclass(frozen=True)
class Skill:
    """What a skill is: `build()` returns a fresh subtree on every call (one per `SkillNode`);
    `inputs` are the keys the subtree reads in its namespace, `outputs` the keys it leaves there."""

    name: str
    build: Callable[[], py_trees.behaviour.Behaviour]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ("final_answer",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if not self.name or not isinstance(self.name, str):
            raise ValueError(f"a skill needs a name, not {self.name!r}")
        if not callable(self.build):
            raise TypeError(f"skill {self.name!r}: build must be a function returning a subtree")
        if not self.outputs:
            raise ValueError(f"skill {self.name!r}: declare at least one output")
        for kind, names in (("input", self.inputs), ("output", self.outputs)):
            if len(set(names)) != len(names):
                raise ValueError(f"skill {self.name!r}: an {kind} is declared twice in {names}")

    def result(self, outputs: Mapping[str, Any]) -> Any:
        """The skill's result from its output values: the only one's, or all of them by name."""
        if len(self.outputs) == 1:
            return outputs[self.outputs[0]]
        return {name: outputs[name] for name in self.outputs}


class SkillNode(FlattenedAgentNode):
    """Runs a `Skill` in its own namespace; inputs in through bindings, `skill_result` out."""

    output_ports = ("skill_result",)

    def __init__(self, name: str, skill: Skill, *, inputs: Mapping[str, str] | None = None,
                 outputs: Mapping[str, str] | None = None, namespace: str | None = None,
                 keys: StateKeys | None = None):
        super().__init__(name=name, namespace=namespace)
        self.skill = skill
        self.input_ports = skill.inputs
        self.keys = keys or StateKeys()
        for kind, given, declared in (("input", inputs, self.input_ports), ("output", outputs, self.output_ports)):
            for port in given or {}:
                if port not in declared:
                    raise ValueError(f"SkillNode {name!r}: skill {skill.name!r} has no {kind} {port!r} "
                                     f"({kind}s: {', '.join(declared) or 'none'})")
        self.bind(inputs, outputs)

    def build_subtree(self) -> py_trees.behaviour.Behaviour:
        return self.skill.build()

    def initialise(self) -> None:
        super().initialise()
        self._require_state().update(self._read_inputs(), self._ns, signal=False)

    def _read_inputs(self) -> dict[str, Any]:
        sm = self._require_state()
        values = {}
        for port in self.skill.inputs:
            key = self.resolve_input_port(port)
            if not sm.contains(key, self.namespace) and not sm.has_field(key):
                raise SkillInputError(f"skill {self.skill.name!r} needs input {port!r}, but state key {key!r} "
                                      f"is not set (bind the input: inputs={{{port!r}: '<state key>'}})")
            values[port] = self.read_port(port)
        return values

    def update(self) -> Status:
        status = super().update()
        if status == Status.SUCCESS:
            outputs = {name: self.state_manager.get(name, self._ns) for name in self.skill.outputs}
            self.write_port("skill_result", self.skill.result(outputs), state_key=self.keys.skill_result)
        return status


__all__ = ["Skill", "SkillInputError", "SkillNode"]
