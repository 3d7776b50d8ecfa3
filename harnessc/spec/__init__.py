"""The agent spec: pydantic models of the YAML, a loader that keeps line numbers, and
diagnostics. Build-time only (pydantic, PyYAML); the runtime never imports it."""

from harnessc.spec.diagnostics import Diagnostic, did_you_mean, format_diagnostics, has_errors
from harnessc.spec.load import LoadedSpec, load_spec, parse_spec
from harnessc.spec.models import SPEC_VERSION, AgentSpec, module_name
from harnessc.spec.schema import export_schema

__all__ = [
    "SPEC_VERSION",
    "AgentSpec",
    "Diagnostic",
    "LoadedSpec",
    "did_you_mean",
    "export_schema",
    "format_diagnostics",
    "has_errors",
    "load_spec",
    "module_name",
    "parse_spec",
]
