"""`jianmu-studio export STORE --run ID --otlp`: a recorded run sent as its OpenTelemetry trace.

The spans are the ones the run would have sent live (runtime/telemetry/), at its recorded times,
to the OTLP endpoint the standard variables name (`OTEL_EXPORTER_OTLP_ENDPOINT`, protocol
http/protobuf). Exit 0 once the endpoint accepted them, 1 when it did not, 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys

from runtime.memory.checkpoint import open_store

from . import stopping


def export_otlp(args: argparse.Namespace) -> int:
    """Bad input raises (`StoreError`, `TelemetryError`, `MissingExtra`: one line each); a refused trace is 1."""
    from runtime.telemetry.recorded import NotSent, export_recorded_run, exporter_from_environment

    exporter_from_environment()  # where to, and [otel], before the store is read
    with stopping.connecting(args.store):
        store = open_store(args.store, create=False)
    try:
        count = export_recorded_run(store, args.run_id)
    except NotSent as exc:
        stopping.complain(exc)
        return 1
    finally:
        store.close()
    print(f"trace: run {args.run_id} ({count} events) sent as OpenTelemetry spans", file=sys.stderr)
    return 0


__all__ = ["export_otlp"]
