"""A TCP relay that adds a one-way delay: the stand-in for `tc netem delay` on kernels
without sch_netem.

usage: delay_relay.py LISTEN_HOST PORT UPSTREAM_HOST DELAY_MS

Listens on LISTEN_HOST:PORT. For each connection it waits DELAY_MS, then connects
to UPSTREAM_HOST:PORT (a refused upstream resets the client, as a closed port
would); every chunk in either direction is delivered DELAY_MS after it arrived, in
order. Prints "ready" once listening. Runs until killed.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import sys

listen_host, port_text, upstream_host, delay_text = sys.argv[1:5]
PORT, DELAY = int(port_text), int(delay_text) / 1000


def reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, chunk = await queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not chunk:
                writer.write_eof() if writer.can_write_eof() else writer.close()
                return
            writer.write(chunk)
            await writer.drain()

    delivery = asyncio.create_task(deliver())
    try:
        while True:
            chunk = await reader.read(65536)
            await queue.put((loop.time() + DELAY, chunk))
            if not chunk:
                break
        await delivery
    except (ConnectionError, OSError):
        delivery.cancel()


async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(DELAY)
    try:
        up_reader, up_writer = await asyncio.open_connection(upstream_host, PORT)
    except OSError:
        reset(client_writer)
        return
    await asyncio.gather(
        pump(client_reader, up_writer), pump(up_reader, client_writer), return_exceptions=True
    )
    client_writer.close()
    up_writer.close()


async def main() -> None:
    server = await asyncio.start_server(relay, listen_host, PORT, reuse_address=True)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
