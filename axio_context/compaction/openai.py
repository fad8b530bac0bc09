"""A summarizer for any OpenAI-compatible chat-completions endpoint (stdlib HTTP, no SDK).

Works with a local Ollama (``http://127.0.0.1:11434/v1``), llama.cpp's server, vLLM, or a hosted
API. The conversation is sent as a plain-text transcript in one user message, so tool calls
never need the endpoint's tool schema. A transcript longer than the model's window is
summarized in chunks, each chunk updating the summary so far. The request runs in a worker
thread (``asyncio.to_thread``); every failure becomes a :class:`SummarizerError` subclass that
names the URL and what went wrong.
"""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request
from typing import Any, Final

import msgspec

from ..errors import SummarizerError, SummarizerHTTPError, SummarizerResponseError, SummarizerTimeoutError
from ..messages import Message
from .models import DEFAULT_CONTEXT_WINDOW, context_window_for
from .summarizers import render_transcript, split_previous_summary, summary_messages

__all__ = ["OpenAICompatibleSummarizer"]

_INSTRUCTION: Final = "Summarize the conversation above."
#: Leave this share of the window for the prompt framing and the reply.
_INPUT_SHARE: Final = 0.6
_CHARS_PER_TOKEN: Final = 4


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

    async def __call__(self, messages: list[Message], system_prompt: str, /) -> str:
        limit = int(self.context_window * _INPUT_SHARE * _CHARS_PER_TOKEN)
        previous, rest = split_previous_summary(messages)
        summary = previous
        chunk: list[Message] = []
        size = 0
        for msg in rest:
            cost = len(render_transcript([msg], max_result_chars=self.max_result_chars)) + 1
            if chunk and size + cost + len(summary or "") > limit:
                summary = await self._summarize_chunk(summary, chunk, system_prompt)
                chunk, size = [], 0
            chunk.append(msg)
            size += cost
        if chunk or summary is None:
            summary = await self._summarize_chunk(summary, chunk, system_prompt)
        return summary

    async def _summarize_chunk(self, previous: str | None, chunk: list[Message], system_prompt: str) -> str:
        framed = (summary_messages(previous) if previous is not None else []) + chunk
        transcript = render_transcript(framed, max_result_chars=self.max_result_chars)
        return await self.complete(system_prompt, f"{transcript}\n\n{_INSTRUCTION}")

    async def complete(self, system_prompt: str, user_text: str) -> str:
        """One chat completion: the reply's text, or a :class:`SummarizerError`."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": user_text},
            ],
            "stream": False,
        }
        if self.max_output_tokens is not None:
            body["max_tokens"] = self.max_output_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        payload = await asyncio.to_thread(self._post, msgspec.json.encode(body))
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
