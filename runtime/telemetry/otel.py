"""Every run traced to OpenTelemetry when the user asked for it, by the standard means.

Tracing is on when the process has the standard exporter variables
(`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; protocol `http/protobuf`,
headers and the rest as the OTLP exporter reads them) or when the host application set an SDK
tracer provider of its own (then its exporters and sampling apply). Otherwise nothing here is
imported beyond this file: `trace_runs`, which each runner calls with its bus, is an environment
look-up. `OTEL_SDK_DISABLED=true` turns it off; `JIANMU_OTEL_SPANS` picks the span layout
(`nodes`, `ticks` or `run`: `spans.py`). OpenTelemetry itself comes with the `[otel]` extra.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import weakref
from typing import Any

from ..extras import MissingExtra, require

log = logging.getLogger(__name__)

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
SPANS = "JIANMU_OTEL_SPANS"
SUPPORTED_PROTOCOL = "http/protobuf"

_traced: weakref.WeakSet[Any] = weakref.WeakSet()  # buses with a tracer already (a bus outlives runners)
_tracers: weakref.WeakSet[Any] = weakref.WeakSet()  # live tracers, their open runs ended at exit
_provider: Any = None  # the provider made from the environment, once per process
_said: set[str] = set()  # problems already logged (once per process, not per runner)
_closing_registered = False


class TelemetryError(Exception):
    """Tracing asked for but impossible (a protocol this install cannot speak); `str()` is one line."""


def exporter_configured() -> bool:
    return any(os.environ.get(name) for name in ENDPOINTS)


def _disabled() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def host_provider() -> Any:
    """The SDK tracer provider the host application set globally, else None (without importing
    OpenTelemetry when nothing did)."""
    if "opentelemetry.trace" not in sys.modules:
        return None
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    return provider if hasattr(provider, "add_span_processor") else None  # a proxy or no-op one is no setup


def otlp_exporter() -> Any:
    """The OTLP/HTTP span exporter the standard variables configure; `MissingExtra` without `[otel]`,
    `TelemetryError` for a protocol other than http/protobuf."""
    protocol = next((os.environ[name] for name in PROTOCOLS if os.environ.get(name)), SUPPORTED_PROTOCOL)
    if protocol.strip() != SUPPORTED_PROTOCOL:
        raise TelemetryError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: this install exports traces over "
                             f"{SUPPORTED_PROTOCOL} only; set that (the collector's HTTP port, usually 4318)")
    require("otel", "opentelemetry.sdk")
    exporter = require("otel", "opentelemetry.exporter.otlp.proto.http.trace_exporter").OTLPSpanExporter
    if any(name.endswith("_CREDENTIAL_PROVIDER") for name in os.environ if name.startswith("OTEL_PYTHON_EXPORTER_OTLP")):
        return exporter()  # the session the user's provider makes
    return exporter(session=_redirects_refused())


class Redirected(Exception):
    """The endpoint answered a redirect: the exporter never follows one (its body would go to an
    address nobody configured) yet counts any 3xx as delivered, so the trace went nowhere, said sent."""


def _redirects_refused() -> Any:
    """A requests session whose redirect answers fail the export (`Redirected`), naming where to."""
    import requests

    from ..urls import masked_url

    def refuse(response: Any, *args: Any, **kwargs: Any) -> None:
        if 300 <= response.status_code < 400:
            where = response.headers.get("location")
            raise Redirected(f"HTTP {response.status_code}: the endpoint redirects"
                             + (f" to {masked_url(where)}" if where else ""))

    session = requests.Session()
    session.hooks["response"].append(refuse)
    return session


def provider_from_environment(exporter: Any = None) -> Any:
    """An SDK tracer provider exporting in batches to `exporter` (default: `otlp_exporter()`), its
    service named `jianmu` unless the standard variables name one."""
    exporter = exporter if exporter is not None else otlp_exporter()
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "jianmu"}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _live_provider() -> Any:
    """The provider live runs trace to: the host's, else one from the environment (made global, so the
    spans libraries make inside a call, the MCP SDK's, go to the same place), else None."""
    global _provider
    host = host_provider()
    if host is not None:
        return host
    if _provider is None and exporter_configured():
        _provider = provider_from_environment()
        from opentelemetry import trace

        trace.set_tracer_provider(_provider)  # its own atexit shutdown flushes the last spans
    return _provider


def trace_runs(bus: Any, agent: str | None = None) -> None:
    """Trace every run on `bus` when tracing is on (see the module); a no-op otherwise. Called by
    `ReactiveRunner`; a problem (no `[otel]`, a wrong protocol) is logged once and the run goes on."""
    if _disabled() or bus in _traced or not (exporter_configured() or host_provider() is not None):
        return
    try:
        provider = _live_provider()
        from .spans import RunTracer

        tracer = RunTracer(provider, agent=agent, spans=os.environ.get(SPANS, "nodes").strip() or "nodes",
                           live=True)
    except (MissingExtra, TelemetryError, ValueError) as exc:
        _say_once(f"no OpenTelemetry traces: {exc}" if not isinstance(exc, ValueError)
                  else f"no OpenTelemetry traces: {SPANS}: {exc}")
        return
    if provider is None:
        return
    global _closing_registered
    if not _closing_registered:  # registered after the provider's shutdown: runs first, open runs exported too
        atexit.register(_close_open_runs)
        _closing_registered = True
    bus.subscribe(tracer.on_event, types=tracer.wanted)
    _traced.add(bus)
    _tracers.add(tracer)


def _say_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        log.warning(message)


def _close_open_runs() -> None:
    for tracer in list(_tracers):
        tracer.close()


__all__ = ["TelemetryError", "exporter_configured", "host_provider", "otlp_exporter", "provider_from_environment",
           "trace_runs"]
