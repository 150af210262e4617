"""A recorded run sent as the trace it would have made live, at its recorded times.

`jianmu-studio export STORE --run ID --otlp` reads the run's events from its store (its main
branch: a fork is a run of its own in the studio, not part of what happened) and feeds them to the
same `RunTracer` a live run uses, through a tracer provider of its own that exports over OTLP/HTTP
as the standard variables say, flushed before it returns.
"""

from __future__ import annotations

import os
from typing import Any

from ..memory.checkpoint import CheckpointStore, StoreError
from ..urls import masked_url
from .otel import SPANS, TelemetryError, exporter_configured, otlp_exporter, provider_from_environment

MAIN = "main"


class NotSent(TelemetryError):
    """The endpoint did not accept the trace (unreachable, or it refused it)."""


def export_recorded_run(store: CheckpointStore, run_id: str, *, spans: str | None = None,
                        tracer_provider: Any = None) -> int:
    """Send the run's trace (to `tracer_provider`, else to the OTLP endpoint the environment names);
    returns how many events it was made from. `StoreError` for a run the store does not hold,
    `TelemetryError` when there is nowhere to send it or it could not be sent."""
    events = [event for branch, event in store.events(run_id) if branch == MAIN]
    if not events:
        raise StoreError(f"{store.location}: no run {run_id!r} (or it recorded no events)")
    exporter = None
    if tracer_provider is None:
        exporter = _Counted(exporter_from_environment())
        tracer_provider = provider_from_environment(exporter)
    from .spans import RunTracer

    tracer = RunTracer(tracer_provider, agent=_root_name(events),
                       spans=spans or os.environ.get(SPANS, "nodes").strip() or "nodes")
    tracer.feed(events)
    tracer.close(end=events[-1].time)  # a run recorded unfinished ends at its last event
    if exporter is not None:
        tracer_provider.shutdown()  # exports what is left, then closes
        if exporter.failed or not exporter.sent:
            raise NotSent(f"the trace of run {run_id} was not accepted by {_endpoint()}")
    return len(events)


class _Counted:
    """An exporter that remembers whether every batch was accepted (the SDK only logs a failure)."""

    def __init__(self, exporter: Any):
        self.exporter, self.sent, self.failed = exporter, 0, 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.exporter.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)


def exporter_from_environment() -> Any:
    """The OTLP exporter the standard variables name; `TelemetryError` when they name none, `MissingExtra`
    without `[otel]` (checked before anything is read: a bad setup is said first)."""
    if not exporter_configured():
        raise TelemetryError("--otlp: where to? set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:4318)")
    return otlp_exporter()


def _root_name(events: list[Any]) -> str | None:
    """The tree's root, as a live run names its agent: the first part of the first node path recorded."""
    for event in events:
        for path in [event.node, *(event.payload.get("changed") or ())]:
            if path:
                return str(path).partition("/")[0]
    return None


def _endpoint() -> str:
    return next((masked_url(os.environ[name]) for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
                 if os.environ.get(name)), "the endpoint")


__all__ = ["NotSent", "export_recorded_run", "exporter_from_environment"]
