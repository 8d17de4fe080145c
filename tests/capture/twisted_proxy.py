# A Twisted reverse proxy for tests/capture/real_servers_handoff_test.cc: twisted.web's
# ReverseProxyResource on the reactor's one thread, which opens a connection to the backend
# for each request (HTTP/1.0) and passes the request's headers on (X-Weft-Ids among them)
# and the backend's reply back.
#   python3 twisted_proxy.py PORT BACKEND_PORT
import sys

from twisted.internet import reactor
from twisted.web import proxy, server

site = server.Site(proxy.ReverseProxyResource("127.0.0.1", int(sys.argv[2]), b""))
reactor.listenTCP(int(sys.argv[1]), site, interface="127.0.0.1")
reactor.run()
