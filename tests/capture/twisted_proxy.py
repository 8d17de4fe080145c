# A Twisted reverse proxy for tests/capture/real_servers_handoff_test.cc: a twisted.web
# resource on the reactor's one thread, which sends each request on to the backend with an
# Agent over a pool of at most 8 kept connections (HTTPConnectionPool) and answers when the
# reply's body has been read. The request's X-Weft-Ids header is passed on, the backend's
# reply and its X-Weft-Ids sent back.
#   python3 twisted_proxy.py PORT BACKEND_PORT
import io
import sys

from twisted.internet import reactor
from twisted.web import resource, server
from twisted.web.client import Agent, FileBodyProducer, HTTPConnectionPool, readBody
from twisted.web.http_headers import Headers

pool = HTTPConnectionPool(reactor)
pool.maxPersistentPerHost = 8
agent = Agent(reactor, pool=pool)
backend = f"http://127.0.0.1:{sys.argv[2]}"


class Proxy(resource.Resource):
    isLeaf = True

    def render(self, request):
        body = request.content.read()
        headers = Headers({b"X-Weft-Ids": [request.getHeader(b"x-weft-ids") or b""]})
        producer = FileBodyProducer(io.BytesIO(body)) if body else None
        reply = agent.request(request.method, (backend + request.uri.decode()).encode(), headers,
                              producer)

        def answer(response):
            request.setResponseCode(response.code)
            ids = response.headers.getRawHeaders(b"x-weft-ids") or [b""]
            request.setHeader(b"X-Weft-Ids", ids[0])
            return readBody(response)

        def send(content):
            request.write(content)
            request.finish()

        def fail(failure):
            request.setResponseCode(502)
            request.finish()

        reply.addCallback(answer).addCallback(send).addErrback(fail)
        return server.NOT_DONE_YET


reactor.listenTCP(int(sys.argv[1]), server.Site(Proxy()), interface="127.0.0.1")
reactor.run()
