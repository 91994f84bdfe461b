"""The page's routes, on Starlette (it comes with the `mcp` SDK akira already depends on, and
gives routing and a streaming response for server-sent events): pages, the event stream, and
the controls. Each reads or does through the run API only."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akira_cli.errors import AkiraError
from akira_cli.web.assets import CSS, JS

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from akira_cli.api.running import Running
    from akira_cli.api.watching import FleetLister

FOLLOW_EVERY = 0.25
"""How often the stream looks for new events when the last look found none (seconds)."""
HEARTBEAT = 15.0
OUTPUT_LINES = 20
"""The running command's last lines the page shows."""
MAX_BODY = 64 * 1024
ACTIONS = ("stop", "resume", "cancel", "undo")
REFRESH = frozenset(
    {
        "step_completed",
        "stop_condition",
        "loop_started",
        "loop_paused",
        "loop_resumed",
        "loop_completed",
        "ledger",
    }
)
"""Events after which the stream sends where the run stands again."""


def refusal_line(exc: AkiraError) -> str:
    """The CLI's one line for a refusal, as it prints it."""
    from akira_cli.redaction import redact

    return f"akira: error: {redact(str(exc))}"


def build(root: Path, token: str, running: Running, fleet: FleetLister | None = None) -> Starlette:
    """The page's app on `root`; `running` bounds the runs it resumes, `fleet` lists the
    fleet's runs (None: the workspace has no fleet)."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from akira_cli import api
    from akira_cli.web.run_page import run_page
    from akira_cli.web.runs import runs_page

    def page(text: str, status: int = 200) -> Response:
        headers = {
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'self'; style-src 'self'",
        }
        return HTMLResponse(text, status, headers=headers)

    def refused(exc: AkiraError, status: int = 404) -> Response:
        from akira_cli.web.html import frame

        body = f'<p><a href="/">all runs</a></p><p id="refusal">{escape_text(refusal_line(exc))}</p>'
        return page(frame("akira", body), status)

    def runs(request: Request) -> Response:
        try:
            return page(runs_page(root, fleet))
        except AkiraError as exc:
            return refused(exc, 500)

    def one(request: Request) -> Response:
        if not named(request):
            return refused(AkiraError("no such run: a run's page is /run/TASK_ID"))
        try:
            return page(run_page(root, request.path_params["task_id"], token))
        except AkiraError as exc:
            return refused(exc)

    def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "page.css":
            return Response(CSS, media_type="text/css")
        if name == "page.js":
            return Response(JS, media_type="text/javascript")
        return Response("akira: no such file\n", 404, media_type="text/plain")

    async def stream(request: Request) -> Response:
        task_id = request.path_params["task_id"]
        if not named(request):
            return JSONResponse({"line": "akira: error: no such run"}, 404)
        given = request.headers.get("last-event-id") or request.query_params.get("offset") or "0"
        offset = int(given) if given.isdigit() else 0
        try:
            await asyncio.to_thread(api.events, root, task_id, offset, 1)
        except AkiraError as exc:
            return JSONResponse({"line": refusal_line(exc)}, 404)
        return StreamingResponse(
            follow(root, task_id, offset),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def control(request: Request) -> Response:
        task_id, action = request.path_params["task_id"], request.path_params["action"]
        if action not in ACTIONS or not named(request):
            return JSONResponse({"line": f"akira: error: no such action {action!r}"}, 404)
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"line": f"akira: error: the request is over {MAX_BODY} bytes"}, 413)
        try:
            said = json.loads(body or b"{}")
        except ValueError:
            said = None
        if not isinstance(said, dict):
            return JSONResponse({"line": "akira: error: the request is not a JSON object"}, 400)
        try:
            answer = await asyncio.to_thread(act, root, task_id, action, said, running)
        except AkiraError as exc:
            return JSONResponse({"ok": False, "line": refusal_line(exc)}, 409)
        return JSONResponse({"ok": True, "line": answer.line(), "status": answer.data().get("status")})

    return Starlette(
        routes=[
            Route("/", runs),
            Route("/assets/{name}", asset),
            Route("/run/{task_id}", one),
            Route("/run/{task_id}/events", stream),
            Route("/run/{task_id}/{action}", control, methods=["POST"]),
        ]
    )


def named(request: Request) -> bool:
    """The page names runs by task id only (never by a path, which the API would also take)."""
    import re

    from akira_cli.state.models import TASK_ID_PATTERN

    return re.fullmatch(TASK_ID_PATTERN, str(request.path_params.get("task_id", ""))) is not None


def act(root: Path, task_id: str, action: str, said: dict[str, Any], running: Running) -> Any:
    """One control, as the API call the CLI makes for it; a resume within the MCP server's
    bound on the runs a server started (`mcp.max_running`)."""
    from akira_cli import api
    from akira_cli.api.models import Resumed, Started
    from akira_cli.errors import UsageError

    if action == "stop":
        return api.stop(root, task_id)
    if action == "cancel":
        return api.cancel(root, task_id)
    if action == "undo":
        step = said.get("step")
        if not isinstance(step, str) or not step:
            raise UsageError("undo needs the step to undo")
        return api.undo(root, task_id, step)
    guidance = said.get("guidance")
    if guidance is not None and not isinstance(guidance, str):
        raise UsageError("guidance is text")
    with running.lock:
        running.refuse_more()
        answer = api.resume(root, task_id, guidance=guidance or None)
        if isinstance(answer, Started | Resumed):
            running.started(answer)
    return answer


async def follow(root: Path, task_id: str, offset: int) -> AsyncIterator[str]:
    """The log's events from `offset` on, as they are written: each a server-sent event whose
    id is the offset after it, so a reconnecting page goes on where it was; and the running
    command's last output lines whenever they change."""
    from akira_cli import api
    from akira_cli.events import Event
    from akira_cli.web.run_page import facts_now

    quiet = 0.0
    shown: dict[str, Any] | None = None
    yield ": akira follows the event log\n\n"
    while True:
        try:
            found = await asyncio.to_thread(api.events, root, task_id, offset)
            now = (await asyncio.to_thread(api.output, root, task_id, OUTPUT_LINES)).data()
        except AkiraError:
            return  # the run went (archived or cancelled): the page stops listening
        chunks = []
        if now != shown:
            shown = now
            chunks.append(f"event: output\ndata: {json.dumps(now)}\n\n")
        if found.offset != offset:
            for raw in found.events:
                try:
                    text = Event.model_validate(raw).line()
                except ValueError:
                    continue
                item = json.dumps({"event": raw, "line": text})
                chunks.append(f"id: {found.offset}\nevent: akira\ndata: {item}\n\n")
            offset = found.offset
            if any(str(raw.get("type")) in REFRESH for raw in found.events):
                with contextlib.suppress(AkiraError):
                    facts = await asyncio.to_thread(facts_now, root, task_id)
                    chunks.append(f"event: facts\ndata: {json.dumps(facts)}\n\n")
        if chunks:
            quiet = 0.0
            yield "".join(chunks)
            if found.events:
                continue
        await asyncio.sleep(FOLLOW_EVERY)
        quiet += FOLLOW_EVERY
        if quiet >= HEARTBEAT:
            quiet = 0.0
            yield ": still here\n\n"


def escape_text(text: str) -> str:
    from html import escape

    return escape(text)
