"""Route mode's edges: what a client sends, what an engine answers, each bounded and checked.

The proxy (kvtui/live/proxy.py) faces clients it does not know and engines that may die at
any moment, so every read here has a size limit and a timeout, and every way it can fail is a
`Refused` with the HTTP status the client gets: 4xx for the client's own bad input (a body that
is not a JSON object, a `max_tokens` that is not a count, a `Content-Length` that is missing,
not a number, too large or longer than the body), 502 for an engine that answered wrongly or
not at all, 504 for one that took too long. A streamed answer that breaks after its first
bytes cannot change its status any more: it ends with an error event instead
(`data: {"error": ...}`), so the client sees that its stream was cut, as OpenAI's and vLLM's
servers report an error mid-stream.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

MAX_BODY = 8 << 20  # a request body: a long prompt is a few MB of JSON
MAX_ANSWER = 32 << 20  # an engine's whole (non-streamed) answer, or a /tokenize answer
MAX_LINE = 1 << 20  # one line of a streamed answer
MAX_TOKENS = 1 << 24  # the largest `max_tokens` taken (vLLM's context lengths are far below)
MAX_PROMPT_TOKENS = 1 << 22
TOKEN_LIMIT = 1 << 63  # a token id is hashed as int64 (kvtui/sim/workload/hashing.py)
ENGINE_TIMEOUT_S = 600.0  # silence from an engine mid-answer (a long prefill is minutes at most)
TOKENIZE_TIMEOUT_S = 10.0


class Refused(Exception):
    """The request ends here with `status` and `message` (and a log line of `kind`)."""

    def __init__(self, status: int, message: str, kind: str):
        super().__init__(message)
        self.status, self.kind = status, kind


# ------------------------------------------------------------------ the client's request
def read_body(headers, rfile) -> bytes:
    """The body `Content-Length` announces, read whole within the socket's timeout."""
    if headers.get("Transfer-Encoding"):
        raise Refused(411, "send the body with a Content-Length (no Transfer-Encoding)", "length")
    raw = headers.get("Content-Length")
    if raw is None:
        raise Refused(411, "a POST needs a Content-Length", "length")
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()):
        raise Refused(400, f"Content-Length {raw[:40]!r} is not a byte count", "length")
    length = int(raw)
    if length > MAX_BODY:
        raise Refused(413, f"a body of {length:,} bytes is more than the {MAX_BODY:,} route mode takes", "too large")
    try:
        body = rfile.read(length)
    except (TimeoutError, socket.timeout):
        raise Refused(408, "the body did not arrive in time", "timeout") from None
    if len(body) < length:
        raise Refused(400, f"the body ended after {len(body):,} of the {length:,} bytes announced", "length")
    return body


def completion_request(raw: bytes) -> dict:
    """The JSON object of a completion or chat request, its fields checked as far as routing
    reads them."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise Refused(400, f"not a completion request: not JSON ({str(e)[:80]})", "json") from None
    if not isinstance(body, dict):
        raise Refused(400, f"not a completion request: a JSON {type(body).__name__}, not an object", "json")
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TOKENS):
            raise Refused(400, f"`{name}` {str(value)[:40]} is not a token count from 0 to {MAX_TOKENS:,}", "field")
    if "messages" in body:
        if not isinstance(body["messages"], list):
            raise Refused(400, "`messages` is not a list", "field")
    elif not isinstance(body.get("prompt"), (str, list)):
        raise Refused(400, "not a completion request: no `prompt` (a string or a list) and no `messages`", "field")
    return body


def tokenize_body(body: dict) -> dict:
    """What vLLM's /tokenize takes for this request: its prompt, or a chat's messages."""
    ask = {"model": body.get("model")}
    ask.update({"messages": body["messages"]} if "messages" in body else {"prompt": body["prompt"]})
    return ask


def max_tokens(body: dict) -> int:
    return body.get("max_tokens") or body.get("max_completion_tokens") or 16


# ------------------------------------------------------------------ an engine's answers
def tokenize(api: str, ask: dict) -> list[int]:
    """The token ids `api`'s /tokenize gives; Refused(502/504) for an answer that is not one."""
    request = urllib.request.Request(api + "/tokenize", data=json.dumps(ask).encode(),
                                     headers={"Content-Type": "application/json"})
    with engine_call(request, TOKENIZE_TIMEOUT_S) as response:
        answer = read_whole(response)
    try:
        tokens = json.loads(answer)["tokens"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise Refused(502, "/tokenize did not answer {\"tokens\": [...]}", "tokenize") from None
    if not isinstance(tokens, list) or len(tokens) > MAX_PROMPT_TOKENS or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < TOKEN_LIMIT for t in tokens):
        raise Refused(502, "/tokenize did not answer a list of token ids (0 to 2**63 - 1)", "tokenize")
    return tokens


class engine_call:
    """`urlopen` as a context manager whose failures are Refused: an HTTP error answer is
    kept (it is relayed as the engine's), unreachable is 502, too slow is 504."""

    def __init__(self, request, timeout: float):
        self.request, self.timeout, self.response = request, timeout, None

    def __enter__(self):
        try:
            self.response = urllib.request.urlopen(self.request, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            self.response = e
        except Exception as e:  # noqa: BLE001 - whatever the engine did, the client gets an answer
            raise engine_fault(e) from None
        return self.response

    def __exit__(self, *exc) -> None:
        if self.response is not None:
            self.response.close()


def engine_fault(e: BaseException) -> Refused:
    """What an exception from talking to an engine means to the client."""
    reason = getattr(e, "reason", e)
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return Refused(504, f"the engine did not answer in time: {reason}"[:200], "engine timeout")
    return Refused(502, f"engine unreachable or broken: {type(e).__name__}: {e}"[:200], "engine")


def read_whole(response) -> bytes:
    """An engine's whole answer, at most MAX_ANSWER bytes; Refused when it breaks off."""
    try:
        data = response.read(MAX_ANSWER + 1)
    except Exception as e:  # noqa: BLE001 - a connection reset, an incomplete chunk, a timeout
        raise engine_fault(e) from None
    if len(data) > MAX_ANSWER:
        raise Refused(502, f"the engine's answer is more than {MAX_ANSWER:,} bytes", "engine")
    return data


def stream_lines(response):
    """The lines of a streamed answer, each at most MAX_LINE; Refused when it breaks off,
    and when it ends without vLLM's closing `data: [DONE]` (the engine died between events)."""
    done = False
    while True:
        try:
            line = response.readline(MAX_LINE)
        except Exception as e:  # noqa: BLE001 - an incomplete chunk, a reset, a timeout
            raise engine_fault(e) from None
        if not line:
            break
        done = line.strip() == b"data: [DONE]" or (done and not line.strip())
        yield line
    if not done:
        raise Refused(502, "the engine's stream ended without `data: [DONE]`", "stream cut")


def error_event(refused: Refused) -> bytes:
    """The event that ends a stream the engine broke off (its status was already sent)."""
    payload = {"error": {"message": str(refused), "type": "kvtui_route", "code": refused.status}}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def usage(line: bytes) -> tuple[int, int] | None:
    """(`usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens`) of a JSON body or
    a `data: {...}` event; None when it carries no usage. A count that is not an int in
    [0, TOKEN_LIMIT) reads as 0: an engine's answer is input like any other."""
    text = line.strip().removeprefix(b"data:").strip()
    if not text.startswith(b"{") or b"usage" not in text:
        return None
    try:
        found = json.loads(text).get("usage")
        if not isinstance(found, dict):
            return None
        cached = (found.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        completion = found.get("completion_tokens") or 0
    except (ValueError, AttributeError, RecursionError):
        return None
    return _count(cached), _count(completion)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < TOKEN_LIMIT else 0
