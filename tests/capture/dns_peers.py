# The two ends of tests/capture/real_servers_dns_test.cc's DNS forwarders, no library needed:
#
#   dns_peers.py upstream PORT
#       a DNS server on 127.0.0.1:PORT (UDP) that answers every query with an A record of
#       10.0.0.1 from a thread of its own after 0.5 to 4 ms, so that answers come back out
#       of the order of the queries; prints "ready" once bound
#   dns_peers.py client PORT COUNT IN_FLIGHT TAG
#       sends COUNT A queries for q<i>.TAG.weft to 127.0.0.1:PORT from one socket, keeping
#       IN_FLIGHT of them outstanding, and prints how many were answered (not under .test,
#       which resolvers such as unbound answer themselves, RFC 6761)
import random
import socket
import struct
import sys
import threading
import time


def upstream(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", port))
    lock = threading.Lock()

    def answer(query, peer):
        time.sleep(random.uniform(0.0005, 0.004))
        end = 12
        while query[end] != 0:
            end += 1 + query[end]
        question = query[12:end + 5]
        reply = query[:2] + struct.pack(">HHHHH", 0x8180, 1, 1, 0, 0) + question
        reply += struct.pack(">HHHLH", 0xC00C, 1, 1, 60, 4) + bytes([10, 0, 0, 1])
        with lock:
            sock.sendto(reply, peer)

    print("ready", flush=True)
    while True:
        query, peer = sock.recvfrom(4096)
        threading.Thread(target=answer, args=(query, peer), daemon=True).start()


def client(port, count, in_flight, tag):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(5)

    def query(i, qid):
        labels = [b"q%d" % i, tag.encode(), b"weft"]
        name = b"".join(bytes([len(label)]) + label for label in labels) + b"\0"
        return struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1)

    pending, sent, answered = {}, 0, 0
    while answered < count:
        while sent < count and len(pending) < in_flight:
            qid = random.randrange(65536)
            while qid in pending:
                qid = random.randrange(65536)
            pending[qid] = sent
            sock.sendto(query(sent, qid), ("127.0.0.1", port))
            sent += 1
        try:
            reply, _ = sock.recvfrom(4096)
        except socket.timeout:
            break
        if pending.pop(struct.unpack(">H", reply[:2])[0], None) is not None:
            answered += 1
    print(answered)


if __name__ == "__main__":
    if sys.argv[1] == "upstream":
        upstream(int(sys.argv[2]))
    else:
        client(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
