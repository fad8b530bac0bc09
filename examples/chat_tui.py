"""A minimal terminal chat whose every turn is stored through ``AutoCompactStore`` (so a long chat
is compacted, never lost) in the default axio-context database, or ``--db``.

The model is any OpenAI-compatible chat-completions endpoint (a local Ollama or llama.cpp server,
vLLM, a hosted API): ``--base-url``/``$AXIO_CHAT_BASE_URL`` and ``--model``/``$AXIO_CHAT_MODEL``
(the key, if any, from ``$OPENAI_API_KEY``). With neither set it talks to an offline echo model.
On a terminal it is a Textual app (``pip install 'axio-context[tui]'``); with input piped in it
reads one message a line and prints the replies. ``axio-context browse`` shows the sessions.

Run: ``python examples/chat_tui.py`` (or ``--base-url http://127.0.0.1:11434/v1 --model llama3.2``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, ClassVar
from uuid import uuid4

import msgspec

from axio_context import AutoCompactStore, Message, TextBlock
from axio_context.compaction.openai import OpenAICompatibleSummarizer
from axio_context.tokens import estimate_tokens
from axio_context_sqlite import SQLiteContextStore, connect

SYSTEM = "You are a helpful assistant in a terminal chat. Answer briefly."


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Reply(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Reply


class _Completion(msgspec.Struct):
    choices: list[_Choice]
    usage: _Usage | None = None


class Answer(msgspec.Struct):
    """A model's reply and the tokens the request took (input, output)."""

    text: str
    input_tokens: int
    output_tokens: int


class EchoModel:
    """The offline model: says back what it was told (token counts estimated)."""

    name = "echo"

    async def reply(self, history: list[Message]) -> Answer:
        last = history[-1].text if history else ""
        text = f"echo: {last}"
        return Answer(
            text, estimate_tokens(history), estimate_tokens([Message("assistant", [TextBlock(text)])])
        )


class OpenAICompatibleModel:
    """``POST {base_url}/chat/completions`` with the text of the view (stdlib HTTP, in a thread)."""

    def __init__(self, base_url: str, model: str, timeout: float = 120.0) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.name = model
        self.timeout = timeout

    def _post(self, body: bytes) -> bytes:
        headers = {"Content-Type": "application/json"}
        if key := os.environ.get("OPENAI_API_KEY"):
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            data: bytes = response.read()
            return data

    async def reply(self, history: list[Message]) -> Answer:
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
        messages += [{"role": m.role, "content": m.text} for m in history if m.text]
        body = msgspec.json.encode({"model": self.name, "messages": messages})
        done = msgspec.json.decode(await asyncio.to_thread(self._post, body), type=_Completion)
        text = (done.choices[0].message.content or "") if done.choices else ""
        usage = done.usage or _Usage(estimate_tokens(history), len(text) // 4)
        return Answer(text, usage.prompt_tokens, usage.completion_tokens)


class Chat:
    """One conversation: each turn appends the user's message, asks the model for a reply over
    the compacted view, appends it and records the request's tokens (which may compact)."""

    def __init__(self, store: AutoCompactStore, model: EchoModel | OpenAICompatibleModel) -> None:
        self.store, self.model = store, model

    @property
    def session_id(self) -> str:
        return self.store.session_id

    async def turn(self, text: str) -> str:
        await self.store.append(Message("user", [TextBlock(text)]))
        answer = await self.model.reply(await self.store.get_history())
        await self.store.append(Message("assistant", [TextBlock(answer.text)]))
        await self.store.add_context_tokens(answer.input_tokens, answer.output_tokens)
        return answer.text


def choose_model(base_url: str | None, model: str | None) -> EchoModel | OpenAICompatibleModel:
    """The endpoint's model when one is configured, else the echo model."""
    if not base_url and not model:
        return EchoModel()
    return OpenAICompatibleModel(base_url or "https://api.openai.com/v1", model or "gpt-4o-mini")


@asynccontextmanager
async def open_chat(args: argparse.Namespace) -> AsyncIterator[Chat]:
    """The chat of ``args`` over an open database (closed on the way out)."""
    model = choose_model(args.base_url, args.model)
    summarizer = None  # the offline extractive summary for the echo model
    if isinstance(model, OpenAICompatibleModel):
        summarizer = OpenAICompatibleSummarizer(
            model.name, base_url=args.base_url or "https://api.openai.com/v1"
        )
    async with connect(args.db) as conn:
        store = SQLiteContextStore(conn, args.session or uuid4().hex, project=args.project)
        yield Chat(AutoCompactStore(store, summarizer, max_tokens=args.max_tokens), model)


async def plain(args: argparse.Namespace) -> None:
    """Piped input: one message a line, each reply printed."""
    async with open_chat(args) as chat:
        print(f"session {chat.session_id} (model: {chat.model.name})", flush=True)
        for line in sys.stdin if not sys.stdin.isatty() else []:
            if line.strip():
                print(f"you: {line.strip()}\nassistant: {await chat.turn(line.strip())}", flush=True)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--db", help="database file (default: axio-context's default database)")
    p.add_argument("--session", help="continue this session (default: a new one)")
    p.add_argument("--project", default=None, help="project label (default: the current directory)")
    p.add_argument("--base-url", default=os.environ.get("AXIO_CHAT_BASE_URL"), help="OpenAI-compatible API")
    p.add_argument("--model", default=os.environ.get("AXIO_CHAT_MODEL"), help="model name at that API")
    p.add_argument("--max-tokens", type=int, default=None, help="compact past this many input tokens")
    p.add_argument("--plain", action="store_true", help="line mode even on a terminal")
    return p.parse_args(argv)


def chat_app(args: argparse.Namespace) -> Any:
    """The Textual chat: the conversation above a line to type in (Textual imported only here)."""
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Footer, Header, Input, Static

    class ChatApp(App[None]):
        TITLE = "axio-context chat"
        CSS = "#log { height: 1fr; } .user { color: $primary; } .assistant { margin-bottom: 1; }"
        BINDINGS: ClassVar[list[Any]] = [("ctrl+q", "quit", "Quit")]

        def __init__(self) -> None:
            super().__init__()
            self.chat: Chat | None = None
            self._opened: Any = None

        def compose(self) -> ComposeResult:
            yield Header()
            yield VerticalScroll(id="log")
            yield Input(placeholder="message (Enter sends)", id="message")
            yield Footer()

        async def on_mount(self) -> None:
            self._opened = open_chat(args)
            self.chat = await self._opened.__aenter__()
            self.sub_title = f"session {self.chat.session_id} · model {self.chat.model.name}"
            for m in await self.chat.store.get_history():  # a continued session shows its view
                await self.say(m.role, m.text)
            self.query_one(Input).focus()

        async def on_unmount(self) -> None:
            if self._opened is not None:
                await self._opened.__aexit__(None, None, None)

        async def say(self, role: str, text: str) -> None:
            log = self.query_one("#log", VerticalScroll)
            await log.mount(Static(f"{role}: {text}", classes=role))
            log.scroll_end(animate=False)

        async def on_input_submitted(self, event: Input.Submitted) -> None:
            text = event.value.strip()
            event.input.value = ""
            if not text or self.chat is None:
                return
            await self.say("user", text)
            self.run_worker(self.answer(text), group="turns")

        async def answer(self, text: str) -> None:
            assert self.chat is not None
            try:
                await self.say("assistant", await self.chat.turn(text))
            except OSError as exc:  # the endpoint is down: say so, the message stays stored
                await self.say("error", f"the model did not answer: {exc}")

    return ChatApp()


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.plain or not (sys.stdin.isatty() and sys.stdout.isatty()):
        asyncio.run(plain(args))
    else:
        chat_app(args).run()


if __name__ == "__main__":
    main()
