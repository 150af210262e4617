"""A user's process with an agent in it: runs a tree file with the debug server on.

    python tests/debug_target.py sample_trees/react_calculator.py 127.0.0.1:0 [runs.db]

The tree is loaded as the studio loads one (`path.py` or `path.py:function`, its INPUT);
with a store named, the run records checkpoints there (a timeline for the debugger). The
debug server prints its address (and token) on stderr; the run's outcome is one JSON line
on stdout; the runtime's log records go to stderr, as a service that configures logging has
them. The debug tests start this as a subprocess and attach to it.
"""

import asyncio
import json
import logging
import sys

from runtime.memory.checkpoint import open_store
from studio.loader import load_tree


def main() -> None:
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")  # the runtime itself logs to no terminal
    target, address = sys.argv[1], sys.argv[2]
    loaded = load_tree(target)
    agent = loaded.agent
    if len(sys.argv) > 3:
        agent.runner = agent.make_runner(checkpointer=open_store(sys.argv[3]))
    result = asyncio.run(agent.run(loaded.input_data, debug=address))
    messages = getattr(result.state, "messages", None) or []
    print(json.dumps({"status": result.status.value, "final_answer": result.final_answer,
                      "termination_reason": result.termination_reason,
                      "first_message": messages[0].content if messages else None}), flush=True)


if __name__ == "__main__":
    main()
