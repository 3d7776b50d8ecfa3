"""The compiler: validated specs in, agent modules out. ``compile`` is pure; ``write``
and ``check`` touch the disk."""

from harnessc.compiler.render import CompileError, compile, output_name, render

__all__ = ["CompileError", "compile", "output_name", "render"]
