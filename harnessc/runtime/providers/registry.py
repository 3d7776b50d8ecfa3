"""Lazy factories of the HTTP wire-API providers, by api name.

Each factory imports its module on first call, so start-up does not pay for
providers a run never uses. ``providers.get_provider`` may use these.
"""

from __future__ import annotations

from collections.abc import Callable

from harnessc.runtime.providers.base import Provider

__all__ = ["PROVIDER_FACTORIES"]


def _openai_completions() -> Provider:
    from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider

    return OpenAICompletionsProvider()


def _anthropic_messages() -> Provider:
    from harnessc.runtime.providers.anthropic_messages import AnthropicMessagesProvider

    return AnthropicMessagesProvider()


def _google_generative_ai() -> Provider:
    from harnessc.runtime.providers.google_generative_ai import GoogleGenerativeAIProvider

    return GoogleGenerativeAIProvider()


PROVIDER_FACTORIES: dict[str, Callable[[], Provider]] = {
    "openai-completions": _openai_completions,
    "anthropic-messages": _anthropic_messages,
    "google-generative-ai": _google_generative_ai,
}
