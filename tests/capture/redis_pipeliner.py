# A Redis client for tests/capture/real_servers_twemproxy_test.cc: THREADS connections to
# 127.0.0.1:PORT, each sending COUNT SETs of keys k<thread>.<i>.TAG (each key once), PIPELINE
# of them in one write before it reads their answers; prints how many were answered +OK.
#   redis_pipeliner.py PORT THREADS COUNT PIPELINE TAG
import socket
import sys
import threading

port, threads, count, pipeline, tag = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                       int(sys.argv[4]), sys.argv[5])
answered = [0] * threads


def run(t):
    s = socket.create_connection(("127.0.0.1", port))
    replies = s.makefile("rb")
    for first in range(0, count, pipeline):
        batch = range(first, min(count, first + pipeline))
        keys = [f"k{t}.{i}.{tag}".encode() for i in batch]
        s.sendall(b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(k), k)
                           for k in keys))
        for _ in keys:
            answered[t] += replies.readline() == b"+OK\r\n"
    s.close()


workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
print(sum(answered))
