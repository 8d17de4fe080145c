# An asyncio reverse proxy for tests/capture/real_servers_handoff_test.cc, on aiohttp: one
# event loop in one thread serves every client connection and sends each request on to the
# backend over one session's pool of at most 8 kept connections, which any request may
# use (the reused connections that tracers keyed on a connection lose). The request's
# X-Weft-Ids header is passed on, the backend's reply and its X-Weft-Ids sent back.
#   python3 aiohttp_proxy.py PORT BACKEND_PORT
import asyncio
import signal
import sys

from aiohttp import ClientSession, TCPConnector, web


async def main(port, backend):
    session = ClientSession(connector=TCPConnector(limit=8))

    async def proxy(request):
        headers = {"X-Weft-Ids": request.headers.get("X-Weft-Ids", "")}
        body = await request.read()
        async with session.request(request.method, f"http://127.0.0.1:{backend}{request.path_qs}",
                                   data=body, headers=headers) as reply:
            content = await reply.read()
            return web.Response(body=content, status=reply.status,
                                headers={"X-Weft-Ids": reply.headers.get("X-Weft-Ids", "")})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()
    await session.close()


asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
