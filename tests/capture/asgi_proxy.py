# An ASGI reverse proxy for tests/capture/real_servers_handoff_test.cc: uvicorn serving a
# Starlette application on asyncio's loop in one thread, which sends each request on to the
# backend through an httpx.AsyncClient's pool of at most 8 kept connections; a request's
# task waits for a free one. The request's X-Weft-Ids header is passed on, the backend's
# reply and its X-Weft-Ids sent back.
#   WEFT_BACKEND=127.0.0.1:PORT python3 -m uvicorn --port P asgi_proxy:app
import os

import httpx
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

backend = "http://" + os.environ["WEFT_BACKEND"]
client = httpx.AsyncClient(limits=httpx.Limits(max_connections=8, max_keepalive_connections=8))


async def proxy(request):
    body = await request.body()
    reply = await client.request(request.method, backend + request.url.path, content=body,
                                 headers={"X-Weft-Ids": request.headers.get("x-weft-ids", "")})
    return Response(reply.content, status_code=reply.status_code,
                    headers={"X-Weft-Ids": reply.headers.get("x-weft-ids", "")})


app = Starlette(routes=[Route("/{path:path}", proxy, methods=["GET", "POST"])])
