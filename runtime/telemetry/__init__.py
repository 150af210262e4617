"""Runs as OpenTelemetry GenAI traces (the `[otel]` extra).

`otel.trace_runs` turns tracing on for a runner's bus when the standard variables or the host
application ask for it; `spans.RunTracer` makes the spans from a run's events, live or from a
store (`recorded.export_recorded_run`). Nothing here imports OpenTelemetry until a trace is made.
"""
