"""The browser game's HTTP/1.1 connections: uvicorn's h11 protocol, with the checks a server
reached by any client needs and uvicorn leaves out (docs/web.md, "The HTTP layer").

h11 parses; this module only judges what h11 has parsed and times the connection:

* a request with both `Transfer-Encoding` and `Content-Length`, or `Transfer-Encoding` in
  HTTP/1.0, is refused and its connection closed (RFC 9112 6.1 and 6.3: a proxy in front
  could read its length the other way and pass on a request hidden in its body); h11 itself
  refuses a repeated or unknown `Transfer-Encoding` and different `Content-Length` values;
* a request line and headers over `MAX_HEAD` bytes are refused (431), whole or in part
  (h11 bounds only what is still incomplete);
* a request must arrive whole within `request_seconds` of its connection's opening or of the
  answer before it on that connection, else the connection is closed (with a 408 when a
  request had begun and was not answered);
* every refusal here is JSON, `{"error": reason}`, as the app's own.
"""
from __future__ import annotations

import asyncio
import http
import json
import logging
import re

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from trictrac_jax.tools.web_game import CLIP, clip

MAX_HEAD = 16 * 1024  # bytes of a request line and headers
REQUEST_SECONDS = 10.0  # see the module's docstring
KEEP_ALIVE_SECONDS = 5  # an idle connection after an answer (uvicorn's timeout_keep_alive)

log = logging.getLogger("uvicorn.error")  # the server's log


def refusal(status: int, reason: str) -> bytes:
    """A whole HTTP/1.1 response refusing a request: `{"error": reason}`, then the
    connection is closed."""
    body = json.dumps({"error": reason}).encode()
    head = (f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n")
    return head.encode("ascii") + body


def head_size(request: h11.Request) -> int:
    """The bytes of a request's line and headers, as sent less spaces."""
    return len(request.method) + len(request.target) + 8 + sum(
        len(name) + len(value) + 4 for name, value in request.headers)


class CheckedConnection(h11.Connection):
    """h11's server side, refusing also the requests of the module's docstring; it keeps
    the refusal (h11's, or its own) for the answer."""

    def __init__(self, max_incomplete_event_size: int = MAX_HEAD):
        super().__init__(h11.SERVER, max_incomplete_event_size=max_incomplete_event_size)
        self.refused: h11.RemoteProtocolError | None = None

    def next_event(self):
        try:
            event = super().next_event()
            if isinstance(event, h11.Request):
                check(event)
            return event
        except h11.RemoteProtocolError as error:
            self.refused = error
            raise


def check(request: h11.Request) -> None:
    """RemoteProtocolError for a request whose length two readers could read apart, or
    whose head is over MAX_HEAD bytes."""
    names = {name for name, _ in request.headers}
    if b"transfer-encoding" in names and b"content-length" in names:
        raise h11.RemoteProtocolError("a request may not carry both Transfer-Encoding and "
                                      "Content-Length")
    if b"transfer-encoding" in names and request.http_version == b"1.0":
        raise h11.RemoteProtocolError("HTTP/1.0 has no Transfer-Encoding")
    if head_size(request) > MAX_HEAD:
        raise h11.RemoteProtocolError("Receive buffer too long", error_status_hint=431)


def refusal_of(error: h11.RemoteProtocolError | None) -> tuple[int, str]:
    """The status and reason answering h11's refusal (a 4xx, even where h11 hints 501 for a
    Transfer-Encoding it does not know), without the bytes h11 quotes."""
    if error is not None and error.error_status_hint == 431:
        return 431, (f"The request's line and headers are too long (at most {MAX_HEAD} "
                     "bytes).")
    if error is None:
        return 400, "This is no HTTP/1.1 request this server reads."
    detail = re.split(r":? (?:bytearray\()?b['\"]", str(error))[0]  # h11's words, no bytes
    return 400, f"This is no HTTP/1.1 request this server reads ({clip(detail, 2 * CLIP)})."


class CheckedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol over a `CheckedConnection`, with a deadline on each request.
    `uvicorn.Config(http=functools.partial(CheckedH11Protocol, request_seconds=...))`."""

    def __init__(self, config, server_state, app_state, _loop=None,
                 request_seconds: float = REQUEST_SECONDS):
        super().__init__(config, server_state, app_state, _loop)
        self.conn = CheckedConnection(config.h11_max_incomplete_event_size or MAX_HEAD)
        self.request_seconds = request_seconds
        self.deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._time_request()

    def connection_lost(self, exc) -> None:
        if self.deadline is not None and self._unanswered():  # the client's doing
            log.warning("%s - the client closed its connection in the middle of a request.",
                        _peer(self.client))
        self._untime_request()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE,
                                                                          h11.SEND_BODY):
            self._untime_request()  # the request is in (the app answers it), or refused
        else:  # a request to come, or coming
            self._time_request()

    def send_400_response(self, msg: str) -> None:
        self.transport.write(refusal(*refusal_of(self.conn.refused)))
        self.transport.close()

    def _time_request(self) -> None:
        if self.deadline is None:
            self.deadline = self.loop.call_later(self.request_seconds, self._request_late)

    def _untime_request(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _request_late(self) -> None:
        """Close the connection; answer 408 first if a request had begun, unanswered."""
        self.deadline = None
        if self.transport.is_closing():
            return
        if self._unanswered():
            log.warning("%s - a request not whole after %g s: closed (408).",
                        _peer(self.client), self.request_seconds)
            self.transport.write(refusal(408, f"The request did not arrive whole within "
                                              f"{self.request_seconds:g} s."))
        self.transport.close()

    def _unanswered(self) -> bool:
        """Whether a request has begun to arrive and is not answered."""
        if self.conn.their_state is h11.SEND_BODY:
            return self.cycle is None or not self.cycle.response_started
        return bool(self.conn.trailing_data[0])  # between requests: part of the next one


def _peer(client: tuple[str, int] | None) -> str:
    return "%s:%d" % client if client else "a client"
