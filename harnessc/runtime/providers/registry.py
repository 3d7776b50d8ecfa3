"""The built-in wire-API providers, by api name: the one table pools read.

Each factory imports its module on first call, so start-up does not pay for
providers a run never uses; it gets the HttpClientPool to send through (None: the
provider owns a private one).
"""

from __future__ import annotations

from collections.abc import Callable

from harnessc.runtime.providers.base import Provider
from harnessc.runtime.providers.transport import HttpClientPool

__all__ = ["PROVIDER_FACTORIES", "BuiltinFactory"]

BuiltinFactory = Callable[[HttpClientPool | None], Provider]


def _openai_completions(clients: HttpClientPool | None = None) -> Provider:
    from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider

    return OpenAICompletionsProvider(clients)


def _anthropic_messages(clients: HttpClientPool | None = None) -> Provider:
    from harnessc.runtime.providers.anthropic_messages import AnthropicMessagesProvider

    return AnthropicMessagesProvider(clients)


def _google_generative_ai(clients: HttpClientPool | None = None) -> Provider:
    from harnessc.runtime.providers.google_generative_ai import GoogleGenerativeAIProvider

    return GoogleGenerativeAIProvider(clients)


PROVIDER_FACTORIES: dict[str, BuiltinFactory] = {
    "openai-completions": _openai_completions,
    "anthropic-messages": _anthropic_messages,
    "google-generative-ai": _google_generative_ai,
}
