# A Tornado reverse proxy for tests/capture/real_servers_handoff_test.cc: Tornado 6's
# server and AsyncHTTPClient on asyncio's loop in one thread; the client opens a
# connection to the backend for each request (no kept connections) and runs at most 10
# fetches at once, queueing the rest. The request's X-Weft-Ids header is passed on, the
# backend's reply and its X-Weft-Ids sent back.
#   python3 tornado_proxy.py PORT BACKEND_PORT
import asyncio
import signal
import sys

from tornado import httpclient, web


class Proxy(web.RequestHandler):
    SUPPORTED_METHODS = ("GET", "POST")

    async def forward(self):
        reply = await client.fetch(
            f"http://127.0.0.1:{backend}{self.request.uri}", method=self.request.method,
            headers={"X-Weft-Ids": self.request.headers.get("X-Weft-Ids", "")},
            body=self.request.body if self.request.method == "POST" else None,
            raise_error=False)
        self.set_status(reply.code)
        self.set_header("X-Weft-Ids", reply.headers.get("X-Weft-Ids", ""))
        self.finish(reply.body)

    get = post = forward


async def main(port):
    global client
    client = httpclient.AsyncHTTPClient()
    web.Application([(r"/.*", Proxy)]).listen(port, "127.0.0.1")
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()


backend = int(sys.argv[2])
client = None
asyncio.run(main(int(sys.argv[1])))
