"""A summarizer for any OpenAI-compatible chat-completions endpoint (stdlib HTTP, no SDK).

Works with a local Ollama (``http://127.0.0.1:11434/v1``), llama.cpp's server, vLLM, or a hosted
API. The conversation is sent as a plain-text transcript in one user message, so tool calls
never need the endpoint's tool schema. A transcript longer than the model's window is
summarized in chunks, each chunk updating the summary so far; a single message too large for
one request is clipped in the middle (``[... N characters cut ...]``), so every request fits.
The request runs in a worker thread (``asyncio.to_thread``); every failure becomes a
:class:`SummarizerError` subclass that names the URL and what went wrong.
"""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request
from typing import Any, Final

import msgspec

from ..errors import SummarizerError, SummarizerHTTPError, SummarizerResponseError, SummarizerTimeoutError
from ..messages import Message, replace_lone_surrogates
from .models import DEFAULT_CONTEXT_WINDOW, context_window_for
from .summarizers import clip_middle, frame_transcript, render_messages, split_previous_summary

__all__ = ["OpenAICompatibleSummarizer"]

_INSTRUCTION: Final = "Summarize the conversation above."
#: Leave this share of the window for the prompt framing and the reply.
_INPUT_SHARE: Final = 0.6
_CHARS_PER_TOKEN: Final = 4
#: The least transcript a request carries, however long the system prompt.
_MIN_INPUT_CHARS: Final = 1_000


def _framing(summary: str | None) -> int:
    """Characters :func:`frame_transcript` adds around the messages for ``summary``."""
    return 0 if summary is None else len(frame_transcript(summary, [])) + 1


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message


class _Completion(msgspec.Struct):
    choices: list[_Choice]


class _ErrorBody(msgspec.Struct):
    error: dict[str, Any] | str


_decode_completion: Final = msgspec.json.Decoder(_Completion)
_decode_error: Final = msgspec.json.Decoder(_ErrorBody)


class OpenAICompatibleSummarizer:
    """Summaries from ``POST {base_url}/chat/completions``.

    The API key is read from the environment variable ``api_key_env`` at call time and sent as
    a bearer token; when the variable is unset no ``Authorization`` header is sent (local
    servers need none). ``context_window`` defaults to the model's entry in the known-models
    table, else 128,000.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        max_output_tokens: int | None = 1_024,
        temperature: float | None = 0.2,
        context_window: int | None = None,
        max_result_chars: int = 2_000,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty model name")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.context_window = context_window or context_window_for(model, DEFAULT_CONTEXT_WINDOW)
        self.max_result_chars = max_result_chars

    @property
    def url(self) -> str:
        """The chat-completions endpoint requests go to."""
        return f"{self.base_url}/chat/completions"

    def __repr__(self) -> str:
        return f"OpenAICompatibleSummarizer(model={self.model!r}, url={self.url!r})"

    def input_chars(self, system_prompt: str) -> int:
        """Characters of transcript one request may carry: ``_INPUT_SHARE`` of the window (the
        rest is for the reply), at four characters a token, less the prompt and instruction."""
        total = int(self.context_window * _INPUT_SHARE * _CHARS_PER_TOKEN)
        return max(total - len(system_prompt) - len(_INSTRUCTION) - 2, _MIN_INPUT_CHARS)

    async def __call__(self, messages: list[Message], system_prompt: str, /) -> str:
        """The summary, in as many requests as the window needs, each within :meth:`input_chars`.

        Messages are sent whole where they fit. One that cannot fit even alone (a long generated
        file, a pasted log) is clipped in the middle rather than failing every compaction of
        the session; a previous summary longer than half a request is clipped the same way.
        """
        budget = self.input_chars(system_prompt)
        previous, rest = split_previous_summary(messages)
        summary = None if previous is None else clip_middle(previous, budget // 2)
        chunk: list[str] = []
        size = 0
        for part in render_messages(rest, max_result_chars=self.max_result_chars):
            if not part:
                continue
            if chunk and _framing(summary) + size + len(part) > budget:
                summary = clip_middle(await self._summarize_chunk(summary, chunk, system_prompt), budget // 2)
                chunk, size = [], 0
            part = clip_middle(part, budget - _framing(summary) - size)
            chunk.append(part)
            size += len(part) + 1
        if chunk or summary is None:
            summary = await self._summarize_chunk(summary, chunk, system_prompt)
        return summary

    async def _summarize_chunk(self, previous: str | None, chunk: list[str], system_prompt: str) -> str:
        return await self.complete(system_prompt, f"{frame_transcript(previous, chunk)}\n\n{_INSTRUCTION}")

    async def complete(self, system_prompt: str, user_text: str) -> str:
        """One chat completion: the reply's text, or a :class:`SummarizerError`. Lone surrogates
        (tool output decoded with ``surrogateescape``, file names) are sent as U+FFFD: JSON
        requests carry only valid UTF-8."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": replace_lone_surrogates(system_prompt)},
                {"role": "user", "content": replace_lone_surrogates(user_text)},
            ],
            "stream": False,
        }
        if self.max_output_tokens is not None:
            body["max_tokens"] = self.max_output_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        try:
            data = msgspec.json.encode(body)
        except (ValueError, TypeError, msgspec.EncodeError) as exc:  # a model name with a lone surrogate
            raise SummarizerError(f"cannot write the request to {self.url}: {exc}") from None
        payload = await asyncio.to_thread(self._post, data)
        return self._parse(payload)

    def _post(self, data: bytes) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload: bytes = response.read()
                return payload
        except urllib.error.HTTPError as exc:
            try:
                detail = _error_detail(exc.read())
            finally:
                exc.close()
            hint = f" (is {self.api_key_env} set?)" if exc.code in (401, 403) and not key else ""
            raise SummarizerHTTPError(
                f"{self.url} answered HTTP {exc.code} {exc.reason}: {detail}{hint}", exc.code
            ) from None
        except TimeoutError:
            raise SummarizerTimeoutError(f"{self.url} did not answer within {self.timeout:g}s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise SummarizerTimeoutError(f"{self.url} did not answer within {self.timeout:g}s") from None
            raise SummarizerError(f"cannot reach {self.url}: {exc.reason}") from None
        except OSError as exc:
            raise SummarizerError(f"connection to {self.url} failed: {exc}") from None

    def _parse(self, payload: bytes) -> str:
        try:
            completion = _decode_completion.decode(payload)
        except msgspec.DecodeError as exc:
            raise SummarizerResponseError(
                f"{self.url} did not return a chat completion: {exc}; body starts {payload[:200]!r}"
            ) from None
        if not completion.choices:
            raise SummarizerResponseError(f"{self.url} returned a completion with no choices")
        text = completion.choices[0].message.content
        if text is None or not text.strip():
            raise SummarizerResponseError(f"{self.url} returned an empty summary")
        return text.strip()


def _error_detail(body: bytes) -> str:
    """The provider's error message where the body carries one, else the start of the body."""
    try:
        err = _decode_error.decode(body).error
    except msgspec.DecodeError:
        text = body[:300].decode("utf-8", "replace").strip()
        return text or "(empty body)"
    if isinstance(err, str):
        return err
    message = err.get("message")
    return str(message) if message else str(err)[:300]
