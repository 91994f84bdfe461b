"""A client's side of the door for a client that cannot send a header of its own (the MCP
conformance suite): a TCP forwarder on 127.0.0.1 that adds `Authorization: Bearer TOKEN` to
each request and speaks of the server's port where the client named its own (in Host and
Origin, whatever their host), so that a forged Host or Origin still reaches the server forged.
One request per connection (`Connection: close`), so every request gets the header."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

HEADERS_END = b"\r\n\r\n"


@contextmanager
def bearer_proxy(port: int, token: str) -> Iterator[int]:
    """The proxy to `127.0.0.1:port` until the block ends; the port it listens on."""
    loop = asyncio.new_event_loop()
    ready, stop = threading.Event(), asyncio.Event()
    found: list[int] = []

    async def serve() -> None:
        server = await asyncio.start_server(lambda r, w: relay(r, w, port, found[0], token), "127.0.0.1", 0)
        found.append(server.sockets[0].getsockname()[1])
        ready.set()
        async with server:
            await stop.wait()
        relays = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in relays:
            task.cancel()
        await asyncio.gather(*relays, return_exceptions=True)

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    assert ready.wait(30), "the proxy did not start"
    try:
        yield found[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


async def relay(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int, own: int, token: str
) -> None:
    try:
        head = await reader.readuntil(HEADERS_END)
        upstream_reader, upstream = await asyncio.open_connection("127.0.0.1", port)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
        writer.close()
        return
    lines = head[: -len(HEADERS_END)].split(b"\r\n")
    kept = [lines[0]]
    for line in lines[1:]:
        name = line.split(b":", 1)[0].strip().lower()
        if name in (b"connection", b"authorization"):
            continue
        if name in (b"host", b"origin"):
            line = re.sub(rb":%d\b" % own, b":%d" % port, line)
        kept.append(line)
    kept += [b"Authorization: Bearer " + token.encode(), b"Connection: close"]
    upstream.write(b"\r\n".join(kept) + HEADERS_END)

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with suppress(OSError, asyncio.CancelledError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        with suppress(OSError):
            sink.close()

    await asyncio.gather(pipe(reader, upstream), pipe(upstream_reader, writer))
