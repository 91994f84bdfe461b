"""The door of `akira web`: the MCP server's (`akira_cli/door.py`: Host and Origin on every
request, then a token), with a browser's ways of carrying the token:
- the URL akira prints has it in the query string: a GET with it is answered with a redirect to
  the same page without it, setting a cookie (HttpOnly, SameSite=Strict, this port's name) that
  lets the page's own reads (pages, the event stream) through;
- a state-changing request (anything but GET and HEAD) needs the token in a header
  (`X-Akira-Token`, or `Authorization: Bearer`) and an Origin that is the page's own: a cookie
  alone never changes anything, and a cross-site form can send neither.
A request without the token gets 401."""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import parse_qsl, urlencode

from akira_cli.door import Refusal, place

READING = ("GET", "HEAD")


def cookie_name(port: int) -> str:
    """Cookies are not kept apart by port: each server's has its own name."""
    return f"akira_web_{port}"


class WebDoor:
    """ASGI middleware in front of the page (module doc)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    def same(self, given: bytes | str | None) -> bool:
        if given is None:
            return False
        data = given.encode("latin-1", errors="replace") if isinstance(given, str) else given
        return hmac.compare_digest(data, self.token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = place(scope)
        if isinstance(found, Refusal):
            await refuse(send, found)
            return
        method = str(scope.get("method", "GET")).upper()
        port = int((scope.get("server") or ("", 0))[1] or 0)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get("token")
        if method in READING and given is not None and self.same(given):
            rest = [(name, value) for name, value in query if name != "token"]
            path = str(scope.get("path") or "/")
            where = ("/" if path.startswith("//") else path) + (f"?{urlencode(rest)}" if rest else "")
            cookie = f"{cookie_name(port)}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"
            headers = [(b"location", where.encode()), (b"set-cookie", cookie.encode())]
            await send({"type": "http.response.start", "status": 303, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        refusal = self.refusal(found, method, port)
        if refusal is not None:
            await refuse(send, refusal)
            return
        await self.app(scope, receive, send)

    def refusal(self, headers: dict[bytes, bytes], method: str, port: int) -> Refusal | None:
        bearer = headers.get(b"authorization", b"")
        in_header = self.same(headers.get(b"x-akira-token")) or (
            bearer.startswith(b"Bearer ") and self.same(bearer[7:])
        )
        if method in READING:
            if in_header or self.same(cookies(headers.get(b"cookie", b"")).get(cookie_name(port))):
                return None
            return Refusal(401, "open the URL akira printed (it carries the token), or send the token")
        if not in_header:
            return Refusal(401, "a change needs the token in the X-Akira-Token header")
        if b"origin" not in headers:
            return Refusal(403, "a change needs an Origin header naming this page")
        if headers.get(b"sec-fetch-site", b"same-origin") not in (b"same-origin", b"none"):
            return Refusal(403, "requests from another site are refused")
        return None


def cookies(header: bytes) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in header.decode("latin-1").split(";"):
        name, _, value = part.strip().partition("=")
        found.setdefault(name, value)
    return found


async def refuse(send: Any, refusal: Refusal) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8")]
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": f"akira: {refusal.text}\n".encode()})
