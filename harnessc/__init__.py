"""harnessc: compile declarative YAML agent specs into runnable Python agent harnesses."""

__version__ = "0.1.0"
__all__ = ["__version__"]
