"""A user's process with an agent in it: runs a sample tree with the debug server on.

    python tests/debug_target.py sample_trees/react_calculator.py 127.0.0.1:0

The debug server prints its address (and token) on stderr; the run's outcome is one JSON
line on stdout. The debug tests start this as a subprocess and attach to it.
"""

import asyncio
import importlib.util
import json
import sys


def main() -> None:
    path, address = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("debugged_tree", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = asyncio.run(module.build().run(getattr(module, "INPUT", None), debug=address))
    print(json.dumps({"status": result.status.value, "final_answer": result.final_answer,
                      "termination_reason": result.termination_reason,
                      "first_message": result.state.messages[0].content}), flush=True)


if __name__ == "__main__":
    main()
