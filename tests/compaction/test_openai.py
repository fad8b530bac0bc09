"""The OpenAI-compatible summarizer against a real HTTP server on 127.0.0.1 (stdlib, in a thread)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from axio_context import MemoryContextStore, Message
from axio_context.compaction import (
    DEFAULT_COMPACTION_PROMPT,
    AutoCompactStore,
    OpenAICompatibleSummarizer,
    summary_messages,
)
from axio_context.errors import (
    SummarizerError,
    SummarizerHTTPError,
    SummarizerResponseError,
    SummarizerTimeoutError,
)
from axio_context.testing import text
from tests.compaction.test_strategies import session


@dataclass
class Server:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


def _completion(content: Any) -> bytes:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        }
    ).encode()


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append(dict(self.headers))
            mode = self.path.split("/")[1]
            if not self.path.endswith("/v1/chat/completions"):
                self._send(404, b'{"error": {"message": "no such route"}}')
            elif mode == "ok":
                user = body["messages"][1]["content"]
                self._send(200, _completion(f"summary {len(state.requests)}: {len(user)} chars"))
            elif mode == "unauthorized":
                self._send(
                    401,
                    b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}',
                )
            elif mode == "small":  # a 2,000-token model at 4 characters a token refuses more
                chars = sum(len(m["content"]) for m in body["messages"])
                if chars > 2_000 * 4:
                    self._send(400, b'{"error": {"message": "context length exceeded"}}')
                else:
                    self._send(200, _completion(f"summary {len(state.requests)}: {chars} chars"))
            elif mode == "overloaded":
                self._send(503, b"upstream overloaded", "text/plain")
            elif mode == "slow":
                state.release.wait(10)
                self._send(200, _completion("too late"))
            elif mode == "garbage":
                self._send(200, b"<html>not json</html>", "text/html")
            elif mode == "shape":
                self._send(200, b'{"choices": [{"message": {"content": 7}}]}')
            elif mode == "nochoices":
                self._send(200, b'{"choices": []}')
            elif mode == "empty":
                self._send(200, _completion(None))

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def summarizer(server: Server, mode: str, **kw: Any) -> OpenAICompatibleSummarizer:
    return OpenAICompatibleSummarizer("test-model", base_url=f"{server.url}/{mode}/v1", **kw)


async def test_success_sends_a_chat_completion_request(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_SUMMARY_KEY", "sk-local")
    s = summarizer(server, "ok", api_key_env="TEST_SUMMARY_KEY", max_output_tokens=300)
    history = [*summary_messages("before"), text("user", "hello"), text("assistant", "hi there")]
    result = await s(history, DEFAULT_COMPACTION_PROMPT)
    assert result.startswith("summary 1:")
    [request] = server.requests
    assert request["model"] == "test-model" and request["stream"] is False and request["max_tokens"] == 300
    system, user = request["messages"]
    assert system == {"role": "system", "content": DEFAULT_COMPACTION_PROMPT}
    assert user["role"] == "user"
    assert user["content"].startswith("Earlier summary:\nbefore\n\nConversation since then:\nUser: hello\n")
    assert user["content"].endswith("Summarize the conversation above.")
    assert server.headers[0]["Authorization"] == "Bearer sk-local"


async def test_no_key_means_no_authorization_header(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_SUMMARY_KEY", raising=False)
    await summarizer(server, "ok", api_key_env="TEST_SUMMARY_KEY")([text("user", "x")], "p")
    assert "Authorization" not in server.headers[0]


async def test_http_4xx_names_status_and_provider_message(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_SUMMARY_KEY", raising=False)
    s = summarizer(server, "unauthorized", api_key_env="TEST_SUMMARY_KEY")
    with pytest.raises(SummarizerHTTPError) as info:
        await s([text("user", "x")], "p")
    assert info.value.status == 401
    assert "HTTP 401" in str(info.value) and "Incorrect API key provided" in str(info.value)
    assert "is TEST_SUMMARY_KEY set?" in str(info.value)
    with pytest.raises(SummarizerHTTPError, match=r"HTTP 404 .*no such route"):
        await OpenAICompatibleSummarizer("m", base_url=f"{server.url}/ok/v2")([text("user", "x")], "p")


async def test_http_5xx_with_a_text_body(server: Server) -> None:
    with pytest.raises(SummarizerHTTPError, match=r"HTTP 503 .*upstream overloaded") as info:
        await summarizer(server, "overloaded")([text("user", "x")], "p")
    assert info.value.status == 503


async def test_timeout(server: Server) -> None:
    with pytest.raises(SummarizerTimeoutError, match=r"did not answer within 0\.3s"):
        await summarizer(server, "slow", timeout=0.3)([text("user", "x")], "p")


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("garbage", "did not return a chat completion: JSON is malformed"),
        (
            "shape",
            r"a chat completion: Expected `str \| null`, got `int` - at `\$.choices\[0\].message.content`",
        ),
        ("nochoices", "no choices"),
        ("empty", "empty summary"),
    ],
)
async def test_malformed_responses(server: Server, mode: str, message: str) -> None:
    with pytest.raises(SummarizerResponseError, match=message):
        await summarizer(server, mode)([text("user", "x")], "p")


async def test_unreachable_server() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = OpenAICompatibleSummarizer("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=2)
    with pytest.raises(SummarizerError, match=f"cannot reach http://127.0.0.1:{port}/v1/chat/completions"):
        await s([text("user", "x")], "p")


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAICompatibleSummarizer("m", base_url="localhost:8080")
    with pytest.raises(ValueError, match="timeout"):
        OpenAICompatibleSummarizer("m", timeout=0)


async def test_long_transcripts_are_summarized_in_chunks(server: Server) -> None:
    s = summarizer(server, "ok", context_window=2_000)  # ~4,800 chars of transcript per request
    history = session(12, result_chars=1_500)
    result = await s(history, "p")
    assert len(server.requests) > 2
    for previous, request in zip(server.requests, server.requests[1:], strict=False):
        user = request["messages"][1]["content"]
        assert user.startswith("Earlier summary:\nsummary ")
        assert len(user) < 2_000 * 4
        assert previous is not request
    assert result.startswith(f"summary {len(server.requests)}:")


async def test_auto_compact_store_with_the_http_summarizer(server: Server) -> None:
    inner = MemoryContextStore()
    store = AutoCompactStore(inner, summarizer(server, "ok"), keep_recent=3, max_tokens=100)
    history = session(3)
    await store.append_many(history)
    await store.add_context_tokens(101, 5)
    [checkpoint] = await store.list_checkpoints()
    assert checkpoint.summarizer == "test-model"
    view: list[Message] = await store.get_history()
    assert view[0].text.startswith("summary 1:") and view[2:] == history[-3:]
    assert await inner.get_full_history() == history


async def test_auto_compact_store_survives_a_failing_endpoint(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    store = AutoCompactStore(
        MemoryContextStore(), summarizer(server, "overloaded"), keep_recent=2, max_tokens=100
    )
    await store.append_many(session(3))
    await store.add_context_tokens(500, 5)
    assert await store.list_checkpoints() == []
    assert await store.get_history() == session(3)
    assert "HTTP 503" in caplog.text


def request_chars(request: dict[str, Any]) -> int:
    return sum(len(m["content"]) for m in request["messages"])


async def test_a_message_larger_than_a_request_is_clipped_not_refused(server: Server) -> None:
    code = "def parse():\n" + "    x = 1  # step\n" * 2_500 + "    return DONE\n"  # ~45 KB
    history = [text("user", "write the parser"), text("assistant", code), *session(2)]
    s = summarizer(server, "small", context_window=2_000)
    budget = int(2_000 * 0.6 * 4)
    assert (await s(history, DEFAULT_COMPACTION_PROMPT)).startswith("summary")
    assert all(request_chars(r) <= budget for r in server.requests)
    [clipped] = [r["messages"][1]["content"] for r in server.requests if "characters cut ...]" in str(r)]
    assert "Assistant: def parse():" in clipped and "return DONE" in clipped  # both ends are kept

    # An earlier summary far larger than a request is clipped too, and compaction succeeds.
    server.requests.clear()
    store = AutoCompactStore(
        MemoryContextStore([*summary_messages("earlier " * 5_000), *history]), s, keep_recent=2
    )
    assert await store.compact()
    assert server.requests and all(request_chars(r) <= budget for r in server.requests)
    assert (await store.get_history())[0].text.startswith("summary")


async def test_a_long_system_prompt_shrinks_the_transcript(server: Server) -> None:
    s = summarizer(server, "small", context_window=2_000)
    prompt = "Summarize carefully. " * 100  # 2,100 characters of the 4,800 a request may hold
    assert await s([text("user", "q" * 20_000), *session(3)], prompt)
    assert all(request_chars(r) <= int(2_000 * 0.6 * 4) for r in server.requests)
