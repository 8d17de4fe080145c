// The built-in scenarios' TOML (docs/generator.md says what each models and why).
#include "gen/scenarios.h"

#include <fmt/format.h>

#include "core/file.h"

namespace weft {
namespace {

// Project 5 Figure 10. %EXTRA% marks the WS -> AP call of each request type, where
// multitier-added-delay adds 200 ms on WS2 only (§7.2); %HEADER% its own comment.
constexpr std::string_view kMultitier =
    R"toml(# multitier: Project 5 Figure 10 (§7.2). CLIENT calls a load-balanced web server (WS1 or
# WS2), which calls AUTH and then an application server (AP1 or AP2), which queries DB.
# Call delays average 50 ms and return delays 10 ms (§7.5.6). 42 loops in all (the
# paper's mean parallelism of 42, Figure 17) give about 200,000 messages in 500 s. Request
# types run with different frequencies; with the load balancing they make 34 path
# patterns whose expected counts differ by at least 6% down to rank 31; seed 6 is one whose
# top 31 counts are all distinct (no exact ties for the top-N test of §7.5.1).
%HEADER%seed = 6
duration = "500s"

# the most frequent request: session checked in DB, two queries
[[tracelet]]
name = "browse"
instances = 13
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "call", from = "AUTH", to = "DB", id = "session", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "session", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "call", from = "$AP", to = "DB", id = "q1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q1", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$AP", to = "DB", id = "q2", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q2", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# static content served by the web server alone
[[tracelet]]
name = "static"
instances = 7
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# three queries
[[tracelet]]
name = "catalog"
instances = 6
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "call", from = "$AP", to = "DB", id = "q1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q1", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$AP", to = "DB", id = "q2", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q2", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$AP", to = "DB", id = "q3", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q3", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# two queries
[[tracelet]]
name = "cart"
instances = 5
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "call", from = "$AP", to = "DB", id = "q1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q1", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$AP", to = "DB", id = "q2", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q2", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# credentials checked in DB; the AP creates a session without the DB
[[tracelet]]
name = "login"
instances = 5
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "call", from = "AUTH", to = "DB", id = "session", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "session", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# session checked in DB, one query
[[tracelet]]
name = "account"
instances = 3
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "call", from = "AUTH", to = "DB", id = "session", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "session", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "call", from = "$AP", to = "DB", id = "q1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q1", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# one query
[[tracelet]]
name = "status"
instances = 1
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "call", from = "$AP", to = "DB", id = "q1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q1", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# answered by the AP from its cache
[[tracelet]]
name = "search"
instances = 1
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

# two serial calls to the same AP
[[tracelet]]
name = "checkout"
instances = 1
think = ["0.5s", "1s"]
choose.WS = { WS1 = 3, WS2 = 2 }
choose.AP = { AP1 = 2, AP2 = 1 }
steps = [
  { op = "call", from = "CLIENT", to = "$WS", id = "req" },
  { op = "call", from = "$WS", to = "AUTH", id = "auth", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "auth", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app", delay = "50ms", sd = "10ms"%EXTRA% },
  { op = "call", from = "$AP", to = "DB", id = "q1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q1", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "app", delay = "10ms", sd = "2ms" },
  { op = "call", from = "$WS", to = "$AP", id = "app2", delay = "50ms", sd = "10ms" },
  { op = "call", from = "$AP", to = "DB", id = "q3", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "q3", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "app2", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "req", delay = "10ms", sd = "2ms" },
]

)toml";

// Project 5 Figure 18 (§7.5.2): the pathological cases for the nesting algorithm. A calls B;
// what B does with C (and D) differs. Delays as in multitier.
constexpr std::string_view kChildrenParallel =
    R"toml(# children-parallel: B calls C twice in parallel (Project 5 §7.5.2, Figure 18). Breaks all
# three child-penalty heuristics of the nesting algorithm.
seed = 1
duration = "500s"

[[tracelet]]
name = "parallel"
instances = 20
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "call", from = "B", to = "C", id = "c1", delay = "50ms", sd = "10ms" },
  { op = "call", from = "B", to = "C", id = "c2", delay = "50ms", sd = "10ms", after = "b" },
  { op = "ret", ret = "c1", delay = "10ms", sd = "2ms", after = "c1", id = "c1r" },
  { op = "ret", ret = "c2", delay = "10ms", sd = "2ms", after = "c2", id = "c2r" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms", after = ["c1r", "c2r"] },
]
)toml";

constexpr std::string_view kChildren02 =
    R"toml(# children-0-2: B calls C twice in series in one pattern and not at all in the other
# (Project 5 §7.5.2, Figure 18). Hard without a scoreboard.
seed = 1
duration = "500s"

[[tracelet]]
name = "two"
instances = 10
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "call", from = "B", to = "C", id = "c1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c1", delay = "10ms", sd = "2ms" },
  { op = "call", from = "B", to = "C", id = "c2", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c2", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]

[[tracelet]]
name = "zero"
instances = 10
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]
)toml";

constexpr std::string_view kChildrenDcc =
    R"toml(# children-d-cc: B calls C twice in series in one pattern and D once in the other (Project 5
# §7.5.2, Figure 18). The child penalties wrongly suggest B calls C and D in series.
seed = 1
duration = "500s"

[[tracelet]]
name = "cc"
instances = 10
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "call", from = "B", to = "C", id = "c1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c1", delay = "10ms", sd = "2ms" },
  { op = "call", from = "B", to = "C", id = "c2", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c2", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]

[[tracelet]]
name = "d"
instances = 10
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "call", from = "B", to = "D", id = "d", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "d", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]
)toml";

constexpr std::string_view kPenaltyBreaker =
    R"toml(# penalty-breaker: two paths with several calls to the same child (B calls C twice, or three
# times) and one with none; the two longer paths have identical delays (Project 5 §7.5.2,
# Figure 18). Breaks two of the three child penalties.
seed = 1
duration = "500s"

[[tracelet]]
name = "two"
instances = 8
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "call", from = "B", to = "C", id = "c1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c1", delay = "10ms", sd = "2ms" },
  { op = "call", from = "B", to = "C", id = "c2", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c2", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]

[[tracelet]]
name = "three"
instances = 8
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "call", from = "B", to = "C", id = "c1", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c1", delay = "10ms", sd = "2ms" },
  { op = "call", from = "B", to = "C", id = "c2", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c2", delay = "10ms", sd = "2ms" },
  { op = "call", from = "B", to = "C", id = "c3", delay = "50ms", sd = "10ms" },
  { op = "ret", ret = "c3", delay = "10ms", sd = "2ms" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]

[[tracelet]]
name = "none"
instances = 8
think = ["0.5s", "1s"]
steps = [
  { op = "call", from = "A", to = "B", id = "b" },
  { op = "ret", ret = "b", delay = "10ms", sd = "2ms" },
]
)toml";

// Message-based mail transit, the kind of system behind Project 5's Received-header trace
// (§7.1.3, §7.4): each hop a MSG, forwarded mostly at once and sometimes after 10-15 s.
constexpr std::string_view kEmail =
    R"toml(# email: mail transit over 19 nodes (Project 5 §7.1.3): external senders (EXT1-8) ->
# gateways (GW1-2), some through a spam filter (SPAM) -> internal relays (RELAY1-4) ->
# mailbox servers (MBOX1-4). Every hop is a MSG forwarded mostly at once (about 1 s) and
# 15% of the time after 10-15 s (a queue run). Over two days, five routes are frequent
# (hundreds of messages per path pattern or more) and five are rare (under 100 each).
seed = 1
duration = "48h"

[[tracelet]]
name = "newsletter"
instances = 3
think = ["5m", "15m"]
steps = [
  { op = "msg", from = "EXT1", to = "GW1", id = "in" },
  { op = "msg", from = "GW1", to = "RELAY1", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "RELAY1", to = "MBOX1", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
]

[[tracelet]]
name = "partner"
instances = 2
think = ["10m", "20m"]
steps = [
  { op = "msg", from = "EXT2", to = "GW2" },
  { op = "msg", from = "GW2", to = "RELAY2", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "RELAY2", to = "MBOX2", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
]

# a mailing list: the relay delivers one copy to each of three mailbox servers, in turn
# (one pattern: children are ordered by send time in a path pattern)
[[tracelet]]
name = "list"
instances = 1
think = ["20m", "40m"]
steps = [
  { op = "msg", from = "EXT3", to = "GW1" },
  { op = "msg", from = "GW1", to = "RELAY3", id = "relay", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "RELAY3", to = "MBOX1", after = "relay", delay = "0.5s", sd = "0.1s" },
  { op = "msg", from = "RELAY3", to = "MBOX3", after = "relay", delay = "2s", sd = "0.2s" },
  { op = "msg", from = "RELAY3", to = "MBOX4", after = "relay", delay = "4s", sd = "0.3s" },
]

[[tracelet]]
name = "scanned"
instances = 1
think = ["15m", "45m"]
steps = [
  { op = "msg", from = "EXT4", to = "GW2" },
  { op = "msg", from = "GW2", to = "SPAM", delay = "0.5s", sd = "0.2s" },
  { op = "msg", from = "SPAM", to = "RELAY4", delay = [{ mean = "2s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "RELAY4", to = "MBOX4", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
]

# mail from an internal user to the outside
[[tracelet]]
name = "outbound"
instances = 1
think = ["10m", "30m"]
steps = [
  { op = "msg", from = "MBOX2", to = "RELAY2" },
  { op = "msg", from = "RELAY2", to = "GW2", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "GW2", to = "EXT5", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
]

# rare: spam from four senders, each its own path pattern
[[tracelet]]
name = "spam"
instances = 1
think = ["1h", "2h"]
choose.SENDER = { EXT5 = 1, EXT6 = 1, EXT7 = 1, EXT8 = 1 }
steps = [
  { op = "msg", from = "$SENDER", to = "GW1" },
  { op = "msg", from = "GW1", to = "SPAM", delay = "0.5s", sd = "0.2s" },
  { op = "msg", from = "SPAM", to = "RELAY1", delay = [{ mean = "2s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "RELAY1", to = "MBOX3", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
]

# rare: forwarded between relays
[[tracelet]]
name = "forward"
instances = 1
think = ["2h", "4h"]
steps = [
  { op = "msg", from = "EXT1", to = "GW1" },
  { op = "msg", from = "GW1", to = "RELAY3", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "RELAY3", to = "RELAY4", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
  { op = "msg", from = "RELAY4", to = "MBOX4", delay = [{ mean = "1s", sd = "0.5s", weight = 0.85 }, { mean = "12s", sd = "1.5s", weight = 0.15 }] },
]
)toml";

// WAP5 §6 in miniature: Coral/CoDeeN-like content distribution over a wide-area network.
constexpr std::string_view kWideArea =
    R"toml(# wide-area: a content distribution network in the manner of Coral and CoDeeN (WAP5 §2.1,
# §6). Clients (20,000 of them, untraced, named CL-<k>) ask a proxy (P1-P3); a hit is
# served from the cache; a miss looks up the origin's name in DNS and fetches from an
# origin server (WEB1, WEB2), directly or through a second proxy (CoDeeN's two hops), or
# first asks the DHT (D1-D3) iteratively (Coral: each hop answers the proxy, which asks
# the next), or learns from the DHT that a peer proxy has it and fetches from the peer. Clients, DNS and origin servers are not traced: their messages have one
# timestamp. Every host has its own clock (offsets ~ N(0, 2 s), as PlanetLab's differed)
# and each host pair its own one-way delay (5-80 ms, directions differing by up to 10%).
# A rare path (0.1% of requests: a purge forwarded to every proxy) tests that linking
# finds rare paths. Delays are per node: cache 1 ms, proxy forwarding 0.5 ms, DNS and
# origin service time included in their round trips.
seed = 3
duration = "300s"

[[tracelet]]
name = "hit"
instances = 40
think = ["1s", "2s"]
choose.P = { P1 = 5, P2 = 3, P3 = 2 }
steps = [
  { op = "call", from = "CL", to = "$P", id = "req" },
  { op = "ret", ret = "req", delay = "1ms", sd = "0.3ms" },
]

[[tracelet]]
name = "miss"
instances = 12
think = ["1s", "2s"]
choose.P = { P1 = 5, P2 = 3, P3 = 2 }
choose.W = { WEB1 = 3, WEB2 = 1 }
steps = [
  { op = "call", from = "CL", to = "$P", id = "req" },
  { op = "call", from = "$P", to = "DNS", id = "dns", delay = "0.5ms", sd = "0.1ms" },
  { op = "ret", ret = "dns", delay = "20ms", sd = "5ms" },
  { op = "call", from = "$P", to = "$W", id = "get", delay = "0.5ms", sd = "0.1ms" },
  { op = "ret", ret = "get", delay = "30ms", sd = "10ms" },
  { op = "ret", ret = "req", delay = "0.5ms", sd = "0.1ms" },
]

[[tracelet]]
name = "two-hop"
instances = 6
think = ["1s", "2s"]
choose.P = { P1 = 5, P2 = 3 }
choose.W = { WEB1 = 3, WEB2 = 1 }
steps = [
  { op = "call", from = "CL", to = "$P", id = "req" },
  { op = "call", from = "$P", to = "P3", id = "fwd", delay = "2ms", sd = "0.5ms" },
  { op = "call", from = "P3", to = "$W", id = "get", delay = "0.5ms", sd = "0.1ms" },
  { op = "ret", ret = "get", delay = "30ms", sd = "10ms" },
  { op = "ret", ret = "fwd", delay = "0.5ms", sd = "0.1ms" },
  { op = "ret", ret = "req", delay = "0.5ms", sd = "0.1ms" },
]

[[tracelet]]
name = "dht"
instances = 5
think = ["1s", "2s"]
choose.P = { P1 = 5, P2 = 3, P3 = 2 }
choose.W = { WEB1 = 3, WEB2 = 1 }
steps = [
  { op = "call", from = "CL", to = "$P", id = "req" },
  { op = "call", from = "$P", to = "D1", id = "h1", delay = "1ms", sd = "0.3ms" },
  { op = "ret", ret = "h1", delay = "2ms", sd = "0.5ms" },
  { op = "call", from = "$P", to = "D2", id = "h2", delay = "1ms", sd = "0.3ms" },
  { op = "ret", ret = "h2", delay = "2ms", sd = "0.5ms" },
  { op = "call", from = "$P", to = "D3", id = "h3", delay = "1ms", sd = "0.3ms" },
  { op = "ret", ret = "h3", delay = "2ms", sd = "0.5ms" },
  { op = "call", from = "$P", to = "$W", id = "get", delay = "0.5ms", sd = "0.1ms" },
  { op = "ret", ret = "get", delay = "30ms", sd = "10ms" },
  { op = "ret", ret = "req", delay = "0.5ms", sd = "0.1ms" },
]

# the DHT names a peer proxy that has the object: fetched from it (Coral)
[[tracelet]]
name = "peer"
instances = 3
think = ["1s", "2s"]
choose.P = { P1 = 3, P2 = 2 }
steps = [
  { op = "call", from = "CL", to = "$P", id = "req" },
  { op = "call", from = "$P", to = "D2", id = "h", delay = "1ms", sd = "0.3ms" },
  { op = "ret", ret = "h", delay = "2ms", sd = "0.5ms" },
  { op = "call", from = "$P", to = "P3", id = "peer", delay = "0.5ms", sd = "0.1ms" },
  { op = "ret", ret = "peer", delay = "1ms", sd = "0.3ms" },
  { op = "ret", ret = "req", delay = "0.5ms", sd = "0.1ms" },
]

# rare: 0.1% of requests
[[tracelet]]
name = "purge"
instances = 1
think = ["25s", "30s"]
steps = [
  { op = "call", from = "CL", to = "P1", id = "req" },
  { op = "call", from = "P1", to = "P2", id = "p2", delay = "1ms", sd = "0.3ms" },
  { op = "ret", ret = "p2", delay = "3ms", sd = "1ms" },
  { op = "call", from = "P1", to = "P3", id = "p3", delay = "1ms", sd = "0.3ms" },
  { op = "ret", ret = "p3", delay = "3ms", sd = "1ms" },
  { op = "ret", ret = "req", delay = "1ms", sd = "0.3ms" },
]

[network]
delay = ["5ms", "80ms"]
jitter = "1ms"
asymmetry = 0.1
clock_sd = "2s"
clients = 20000
untraced = ["CL", "DNS", "WEB1", "WEB2"]
)toml";

// multitier-wan: multitier (above) with two timestamps per message.
constexpr std::string_view kMultitierNetwork = R"toml(
# Two timestamps per message: 10,000 untraced clients (CLIENT-<k>) and four hosts a
# LAN apart (0.2-2 ms one way, directions differing by up to 20%), clocks off by
# N(0, 50 ms).
[network]
delay = ["0.2ms", "2ms"]
jitter = "0.1ms"
asymmetry = 0.2
clock_sd = "50ms"
clients = 10000
untraced = ["CLIENT"]
)toml";

// Microservice scenarios (docs/generator.md, "Microservices"), shaped like public benchmark
// applications; their steps were written out from a per-request call tree.
constexpr std::string_view kShop =
    R"toml(# shop: an online shop shaped like the Go/gRPC microservice demo (a frontend calling about
# ten services). Every request enters the frontend, which calls the services one after
# another, the same service many times per request (a currency conversion per product
# shown, a catalog lookup per item): long sequences of repeated calls to the same services
# from one frontend, which is what makes nesting's choice of parent hard. Service times
# are heavy-tailed (80% near the median, 15% 4x, 5% 15x). One loop per request type, each
# about a quarter of the time busy: --parallelism N gives about N requests in flight, and
# the frontend serves them concurrently.
seed = 1
duration = "60s"

# GET /: currencies, products, cart, one conversion per product shown, an ad (14 RPCs)
[[tracelet]]
name = "home"
instances = 1
think = ["45ms", "95ms"]
steps = [
  { op = "call", from = "CLIENT", to = "frontend", id = "c1" },
  { op = "call", from = "frontend", to = "currency", id = "c2", after = "c1", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c2", id = "r3", after = "c2", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c4", after = "r3", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c4", id = "r5", after = "c4", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "cart", id = "c6", after = "r5", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c6", id = "r7", after = "c6", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c8", after = "r7", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c8", id = "r9", after = "c8", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c10", after = "r9", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c10", id = "r11", after = "c10", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c12", after = "r11", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c12", id = "r13", after = "c12", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c14", after = "r13", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c14", id = "r15", after = "c14", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c16", after = "r15", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c16", id = "r17", after = "c16", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c18", after = "r17", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c18", id = "r19", after = "c18", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c20", after = "r19", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c20", id = "r21", after = "c20", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c22", after = "r21", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c22", id = "r23", after = "c22", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c24", after = "r23", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c24", id = "r25", after = "c24", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "ad", id = "c26", after = "r25", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c26", id = "r27", after = "c26", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r28", after = "r27", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
]

# GET /product: the product, currencies, cart, its price, recommendations (which list the catalog) and each recommended product, an ad (12 RPCs)
[[tracelet]]
name = "product"
instances = 1
think = ["35ms", "70ms"]
steps = [
  { op = "call", from = "CLIENT", to = "frontend", id = "c1" },
  { op = "call", from = "frontend", to = "catalog", id = "c2", after = "c1", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c2", id = "r3", after = "c2", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c4", after = "r3", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c4", id = "r5", after = "c4", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "cart", id = "c6", after = "r5", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c6", id = "r7", after = "c6", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c8", after = "r7", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c8", id = "r9", after = "c8", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "recommendation", id = "c10", after = "r9", delay = "0.15ms", sd = "0.0375ms" },
  { op = "call", from = "recommendation", to = "catalog", id = "c11", after = "c10", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c11", id = "r12", after = "c11", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "ret", ret = "c10", id = "r13", after = "r12", delay = [{ mean = "3ms", sd = "1ms", weight = 0.8 }, { mean = "12ms", sd = "6ms", weight = 0.15 }, { mean = "45ms", sd = "22.5ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c14", after = "r13", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c14", id = "r15", after = "c14", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c16", after = "r15", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c16", id = "r17", after = "c16", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c18", after = "r17", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c18", id = "r19", after = "c18", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c20", after = "r19", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c20", id = "r21", after = "c20", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "ad", id = "c22", after = "r21", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c22", id = "r23", after = "c22", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r24", after = "r23", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
]

# GET /cart: currencies, cart, recommendations, shipping quote and its conversion, each of four items and its price (15 RPCs)
[[tracelet]]
name = "view-cart"
instances = 1
think = ["50ms", "100ms"]
steps = [
  { op = "call", from = "CLIENT", to = "frontend", id = "c1" },
  { op = "call", from = "frontend", to = "currency", id = "c2", after = "c1", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c2", id = "r3", after = "c2", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "cart", id = "c4", after = "r3", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c4", id = "r5", after = "c4", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "recommendation", id = "c6", after = "r5", delay = "0.15ms", sd = "0.0375ms" },
  { op = "call", from = "recommendation", to = "catalog", id = "c7", after = "c6", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c7", id = "r8", after = "c7", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "ret", ret = "c6", id = "r9", after = "r8", delay = [{ mean = "3ms", sd = "1ms", weight = 0.8 }, { mean = "12ms", sd = "6ms", weight = 0.15 }, { mean = "45ms", sd = "22.5ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "shipping", id = "c10", after = "r9", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c10", id = "r11", after = "c10", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c12", after = "r11", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c12", id = "r13", after = "c12", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c14", after = "r13", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c14", id = "r15", after = "c14", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c16", after = "r15", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c16", id = "r17", after = "c16", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c18", after = "r17", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c18", id = "r19", after = "c18", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c20", after = "r19", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c20", id = "r21", after = "c20", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c22", after = "r21", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c22", id = "r23", after = "c22", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c24", after = "r23", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c24", id = "r25", after = "c24", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "catalog", id = "c26", after = "r25", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c26", id = "r27", after = "c26", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c28", after = "r27", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c28", id = "r29", after = "c28", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r30", after = "r29", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
]

# POST /checkout: the checkout service gets the cart, prices each of four items, quotes and converts shipping, charges, ships, empties the cart, mails; then the frontend shows recommendations (21 RPCs)
[[tracelet]]
name = "checkout"
instances = 1
think = ["150ms", "300ms"]
steps = [
  { op = "call", from = "CLIENT", to = "frontend", id = "c1" },
  { op = "call", from = "frontend", to = "checkout", id = "c2", after = "c1", delay = "0.15ms", sd = "0.0375ms" },
  { op = "call", from = "checkout", to = "cart", id = "c3", after = "c2", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c3", id = "r4", after = "c3", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "catalog", id = "c5", after = "r4", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c5", id = "r6", after = "c5", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "currency", id = "c7", after = "r6", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c7", id = "r8", after = "c7", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "catalog", id = "c9", after = "r8", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c9", id = "r10", after = "c9", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "currency", id = "c11", after = "r10", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c11", id = "r12", after = "c11", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "catalog", id = "c13", after = "r12", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c13", id = "r14", after = "c13", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "currency", id = "c15", after = "r14", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c15", id = "r16", after = "c15", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "catalog", id = "c17", after = "r16", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c17", id = "r18", after = "c17", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "currency", id = "c19", after = "r18", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c19", id = "r20", after = "c19", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "shipping", id = "c21", after = "r20", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c21", id = "r22", after = "c21", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "currency", id = "c23", after = "r22", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c23", id = "r24", after = "c23", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "payment", id = "c25", after = "r24", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c25", id = "r26", after = "c25", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "shipping", id = "c27", after = "r26", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c27", id = "r28", after = "c27", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "cart", id = "c29", after = "r28", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c29", id = "r30", after = "c29", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "checkout", to = "email", id = "c31", after = "r30", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c31", id = "r32", after = "c31", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "ret", ret = "c2", id = "r33", after = "r32", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "recommendation", id = "c34", after = "r33", delay = "0.15ms", sd = "0.0375ms" },
  { op = "call", from = "recommendation", to = "catalog", id = "c35", after = "c34", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c35", id = "r36", after = "c35", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "ret", ret = "c34", id = "r37", after = "r36", delay = [{ mean = "3ms", sd = "1ms", weight = 0.8 }, { mean = "12ms", sd = "6ms", weight = 0.15 }, { mean = "45ms", sd = "22.5ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "currency", id = "c38", after = "r37", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c38", id = "r39", after = "c38", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "call", from = "frontend", to = "ad", id = "c40", after = "r39", delay = "0.15ms", sd = "0.0375ms" },
  { op = "ret", ret = "c40", id = "r41", after = "c40", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r42", after = "r41", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
]
)toml";

constexpr std::string_view kBooking =
    R"toml(# booking: a train-ticket booking system shaped like the Java train-ticket benchmark: a
# gateway in front of deep sequential chains (travel -> basic -> station, train, route,
# price; seat -> order, config), the same chain repeated per trip found, and many
# services called several times per request. Heavy-tailed service times; --parallelism N
# gives about N requests in flight.
seed = 1
duration = "60s"

# query trips: for each of three trips the basic service resolves two stations, the train, the route and the price, then the seat service counts sold seats (30 RPCs)
[[tracelet]]
name = "search"
instances = 1
think = ["40ms", "80ms"]
steps = [
  { op = "call", from = "CLIENT", to = "gateway", id = "c1" },
  { op = "call", from = "gateway", to = "travel", id = "c2", after = "c1", delay = "0.1ms", sd = "0.025ms" },
  { op = "call", from = "travel", to = "route", id = "c3", after = "c2", delay = "0.2ms", sd = "0.05ms" },
  { op = "ret", ret = "c3", id = "r4", after = "c3", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "basic", id = "c5", after = "r4", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "basic", to = "station", id = "c6", after = "c5", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c6", id = "r7", after = "c6", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "station", id = "c8", after = "r7", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c8", id = "r9", after = "c8", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "train", id = "c10", after = "r9", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c10", id = "r11", after = "c10", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "route", id = "c12", after = "r11", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c12", id = "r13", after = "c12", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "price", id = "c14", after = "r13", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c14", id = "r15", after = "c14", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c5", id = "r16", after = "r15", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "seat", id = "c17", after = "r16", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "seat", to = "order", id = "c18", after = "c17", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c18", id = "r19", after = "c18", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "seat", to = "config", id = "c20", after = "r19", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c20", id = "r21", after = "c20", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "ret", ret = "c17", id = "r22", after = "r21", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "basic", id = "c23", after = "r22", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "basic", to = "station", id = "c24", after = "c23", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c24", id = "r25", after = "c24", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "station", id = "c26", after = "r25", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c26", id = "r27", after = "c26", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "train", id = "c28", after = "r27", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c28", id = "r29", after = "c28", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "route", id = "c30", after = "r29", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c30", id = "r31", after = "c30", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "price", id = "c32", after = "r31", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c32", id = "r33", after = "c32", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c23", id = "r34", after = "r33", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "seat", id = "c35", after = "r34", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "seat", to = "order", id = "c36", after = "c35", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c36", id = "r37", after = "c36", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "seat", to = "config", id = "c38", after = "r37", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c38", id = "r39", after = "c38", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "ret", ret = "c35", id = "r40", after = "r39", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "basic", id = "c41", after = "r40", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "basic", to = "station", id = "c42", after = "c41", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c42", id = "r43", after = "c42", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "station", id = "c44", after = "r43", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c44", id = "r45", after = "c44", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "train", id = "c46", after = "r45", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c46", id = "r47", after = "c46", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "route", id = "c48", after = "r47", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c48", id = "r49", after = "c48", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "price", id = "c50", after = "r49", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c50", id = "r51", after = "c50", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c41", id = "r52", after = "r51", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "seat", id = "c53", after = "r52", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "seat", to = "order", id = "c54", after = "c53", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c54", id = "r55", after = "c54", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "seat", to = "config", id = "c56", after = "r55", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c56", id = "r57", after = "c56", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "ret", ret = "c53", id = "r58", after = "r57", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "ret", ret = "c2", id = "r59", after = "r58", delay = [{ mean = "3ms", sd = "1ms", weight = 0.8 }, { mean = "12ms", sd = "6ms", weight = 0.15 }, { mean = "45ms", sd = "22.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r60", after = "r59", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
]

# login: verification code, then auth checks the user and issues a token; the gateway loads the user's contacts and orders (11 RPCs)
[[tracelet]]
name = "login"
instances = 1
think = ["50ms", "100ms"]
steps = [
  { op = "call", from = "CLIENT", to = "gateway", id = "c1" },
  { op = "call", from = "gateway", to = "verification", id = "c2", after = "c1", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c2", id = "r3", after = "c2", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "gateway", to = "auth", id = "c4", after = "r3", delay = "0.1ms", sd = "0.025ms" },
  { op = "call", from = "auth", to = "user", id = "c5", after = "c4", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c5", id = "r6", after = "c5", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "auth", to = "user", id = "c7", after = "r6", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c7", id = "r8", after = "c7", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "auth", to = "verification", id = "c9", after = "r8", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c9", id = "r10", after = "c9", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "ret", ret = "c4", id = "r11", after = "r10", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "gateway", to = "contacts", id = "c12", after = "r11", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c12", id = "r13", after = "c12", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "gateway", to = "order", id = "c14", after = "r13", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c14", id = "r15", after = "c14", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "gateway", to = "order", id = "c16", after = "r15", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c16", id = "r17", after = "c16", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "gateway", to = "user", id = "c18", after = "r17", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c18", id = "r19", after = "c18", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "gateway", to = "config", id = "c20", after = "r19", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c20", id = "r21", after = "c20", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r22", after = "r21", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
]

# book a ticket: security checks the user's orders, contacts, the trip (as search, one trip), seats, food, assurance, then the order is created and the user notified (27 RPCs)
[[tracelet]]
name = "preserve"
instances = 1
think = ["140ms", "280ms"]
steps = [
  { op = "call", from = "CLIENT", to = "gateway", id = "c1" },
  { op = "call", from = "gateway", to = "preserve", id = "c2", after = "c1", delay = "0.1ms", sd = "0.025ms" },
  { op = "call", from = "preserve", to = "security", id = "c3", after = "c2", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "security", to = "order", id = "c4", after = "c3", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c4", id = "r5", after = "c4", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "security", to = "order", id = "c6", after = "r5", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c6", id = "r7", after = "c6", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c3", id = "r8", after = "r7", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "contacts", id = "c9", after = "r8", delay = "0.2ms", sd = "0.05ms" },
  { op = "ret", ret = "c9", id = "r10", after = "c9", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "travel", id = "c11", after = "r10", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "travel", to = "route", id = "c12", after = "c11", delay = "0.2ms", sd = "0.05ms" },
  { op = "ret", ret = "c12", id = "r13", after = "c12", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "basic", id = "c14", after = "r13", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "basic", to = "station", id = "c15", after = "c14", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c15", id = "r16", after = "c15", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "station", id = "c17", after = "r16", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c17", id = "r18", after = "c17", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "train", id = "c19", after = "r18", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c19", id = "r20", after = "c19", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "route", id = "c21", after = "r20", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c21", id = "r22", after = "c21", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "basic", to = "price", id = "c23", after = "r22", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c23", id = "r24", after = "c23", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c14", id = "r25", after = "r24", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "travel", to = "seat", id = "c26", after = "r25", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "seat", to = "order", id = "c27", after = "c26", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c27", id = "r28", after = "c27", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "seat", to = "config", id = "c29", after = "r28", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c29", id = "r30", after = "c29", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "ret", ret = "c26", id = "r31", after = "r30", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "ret", ret = "c11", id = "r32", after = "r31", delay = [{ mean = "3ms", sd = "1ms", weight = 0.8 }, { mean = "12ms", sd = "6ms", weight = 0.15 }, { mean = "45ms", sd = "22.5ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "seat", id = "c33", after = "r32", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "seat", to = "order", id = "c34", after = "c33", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c34", id = "r35", after = "c34", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "seat", to = "config", id = "c36", after = "r35", delay = "0.1ms", sd = "0.025ms" },
  { op = "ret", ret = "c36", id = "r37", after = "c36", delay = [{ mean = "0.4ms", sd = "0.133ms", weight = 0.8 }, { mean = "1.6ms", sd = "0.8ms", weight = 0.15 }, { mean = "6ms", sd = "3ms", weight = 0.05 }] },
  { op = "ret", ret = "c33", id = "r38", after = "r37", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "food", id = "c39", after = "r38", delay = "0.2ms", sd = "0.05ms" },
  { op = "call", from = "food", to = "station", id = "c40", after = "c39", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c40", id = "r41", after = "c40", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "food", to = "train", id = "c42", after = "r41", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c42", id = "r43", after = "c42", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "ret", ret = "c39", id = "r44", after = "r43", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "assurance", id = "c45", after = "r44", delay = "0.2ms", sd = "0.05ms" },
  { op = "ret", ret = "c45", id = "r46", after = "c45", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "order", id = "c47", after = "r46", delay = "0.2ms", sd = "0.05ms" },
  { op = "ret", ret = "c47", id = "r48", after = "c47", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "user", id = "c49", after = "r48", delay = "0.2ms", sd = "0.05ms" },
  { op = "ret", ret = "c49", id = "r50", after = "c49", delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "preserve", to = "notification", id = "c51", after = "r50", delay = "0.2ms", sd = "0.05ms" },
  { op = "ret", ret = "c51", id = "r52", after = "c51", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c2", id = "r53", after = "r52", delay = [{ mean = "3ms", sd = "1ms", weight = 0.8 }, { mean = "12ms", sd = "6ms", weight = 0.15 }, { mean = "45ms", sd = "22.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r54", after = "r53", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
]
)toml";

constexpr std::string_view kSocial =
    R"toml(# social: a social network shaped like DeathStarBench's: nginx -> compose-post, which fans
# out in parallel (unique id, media, user, text; text fans out again to URL shortening and
# mentions), then stores the post and updates timelines in parallel; reading a timeline
# fetches posts in parallel batches from post storage (memcached, then MongoDB). Parallel
# fan-outs, repeated calls to the same service within a fan-out, heavy-tailed service
# times; --parallelism N gives about N requests in flight.
seed = 1
duration = "60s"

# compose a post: unique id, media, user and text (which shortens URLs and resolves mentions in parallel) in parallel; then store the post and update the user's and followers' timelines in parallel (24 RPCs)
[[tracelet]]
name = "compose"
instances = 1
think = ["60ms", "120ms"]
steps = [
  { op = "call", from = "CLIENT", to = "nginx", id = "c1" },
  { op = "call", from = "nginx", to = "compose", id = "c2", after = "c1", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "compose", to = "uniqueid", id = "c3", after = "c2", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c3", id = "r4", after = "c3", delay = [{ mean = "0.2ms", sd = "0.0667ms", weight = 0.8 }, { mean = "0.8ms", sd = "0.4ms", weight = 0.15 }, { mean = "3ms", sd = "1.5ms", weight = 0.05 }] },
  { op = "call", from = "compose", to = "media", id = "c5", after = "c2", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c5", id = "r6", after = "c5", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "compose", to = "user", id = "c7", after = "c2", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "user", to = "memcached", id = "c8", after = "c7", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c8", id = "r9", after = "c8", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c7", id = "r10", after = "r9", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "call", from = "compose", to = "text", id = "c11", after = "c2", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "text", to = "urlshorten", id = "c12", after = "c11", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "urlshorten", to = "mongodb", id = "c13", after = "c12", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c13", id = "r14", after = "c13", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c12", id = "r15", after = "r14", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
  { op = "call", from = "text", to = "mention", id = "c16", after = "c11", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "mention", to = "memcached", id = "c17", after = "c16", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c17", id = "r18", after = "c17", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "mention", to = "mongodb", id = "c19", after = "r18", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c19", id = "r20", after = "c19", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c16", id = "r21", after = "r20", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c11", id = "r22", after = ["r15", "r21"], delay = [{ mean = "0.8ms", sd = "0.267ms", weight = 0.8 }, { mean = "3.2ms", sd = "1.6ms", weight = 0.15 }, { mean = "12ms", sd = "6ms", weight = 0.05 }] },
  { op = "call", from = "compose", to = "poststorage", id = "c23", after = ["r4", "r6", "r10", "r22"], delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c24", after = "c23", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c24", id = "r25", after = "c24", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c26", after = "r25", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c26", id = "r27", after = "c26", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c23", id = "r28", after = "r27", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "compose", to = "usertimeline", id = "c29", after = ["r4", "r6", "r10", "r22"], delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "usertimeline", to = "mongodb", id = "c30", after = "c29", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c30", id = "r31", after = "c30", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "usertimeline", to = "memcached", id = "c32", after = "r31", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c32", id = "r33", after = "c32", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c29", id = "r34", after = "r33", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "call", from = "compose", to = "hometimeline", id = "c35", after = ["r4", "r6", "r10", "r22"], delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "hometimeline", to = "socialgraph", id = "c36", after = "c35", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "socialgraph", to = "memcached", id = "c37", after = "c36", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c37", id = "r38", after = "c37", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "socialgraph", to = "mongodb", id = "c39", after = "r38", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c39", id = "r40", after = "c39", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c36", id = "r41", after = "r40", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "memcached", id = "c42", after = "r41", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c42", id = "r43", after = "c42", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "memcached", id = "c44", after = "r43", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c44", id = "r45", after = "c44", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c35", id = "r46", after = "r45", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c2", id = "r47", after = ["r28", "r34", "r46"], delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r48", after = "r47", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
]

# read the home timeline: the timeline's post ids from the cache, then the posts fetched in parallel batches (16 RPCs)
[[tracelet]]
name = "home-timeline"
instances = 1
think = ["40ms", "80ms"]
steps = [
  { op = "call", from = "CLIENT", to = "nginx", id = "c1" },
  { op = "call", from = "nginx", to = "hometimeline", id = "c2", after = "c1", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "hometimeline", to = "memcached", id = "c3", after = "c2", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c3", id = "r4", after = "c3", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "poststorage", id = "c5", after = "r4", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c6", after = "c5", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c6", id = "r7", after = "c6", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c8", after = "r7", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c8", id = "r9", after = "c8", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c5", id = "r10", after = "r9", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "poststorage", id = "c11", after = "r4", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c12", after = "c11", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c12", id = "r13", after = "c12", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c14", after = "r13", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c14", id = "r15", after = "c14", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c11", id = "r16", after = "r15", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "poststorage", id = "c17", after = "r4", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c18", after = "c17", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c18", id = "r19", after = "c18", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c20", after = "r19", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c20", id = "r21", after = "c20", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c17", id = "r22", after = "r21", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "poststorage", id = "c23", after = "r4", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c24", after = "c23", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c24", id = "r25", after = "c24", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c26", after = "r25", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c26", id = "r27", after = "c26", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c23", id = "r28", after = "r27", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "memcached", id = "c29", after = ["r10", "r16", "r22", "r28"], delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c29", id = "r30", after = "c29", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c2", id = "r31", after = "r30", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r32", after = "r31", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
]

# read a user's timeline: ids from cache and database, posts in two parallel batches, then the author (21 RPCs)
[[tracelet]]
name = "user-timeline"
instances = 1
think = ["50ms", "100ms"]
steps = [
  { op = "call", from = "CLIENT", to = "nginx", id = "c1" },
  { op = "call", from = "nginx", to = "usertimeline", id = "c2", after = "c1", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "usertimeline", to = "memcached", id = "c3", after = "c2", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c3", id = "r4", after = "c3", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "usertimeline", to = "mongodb", id = "c5", after = "r4", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c5", id = "r6", after = "c5", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "usertimeline", to = "poststorage", id = "c7", after = "r6", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c8", after = "c7", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c8", id = "r9", after = "c8", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c10", after = "r9", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c10", id = "r11", after = "c10", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c7", id = "r12", after = "r11", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "usertimeline", to = "poststorage", id = "c13", after = "r6", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c14", after = "c13", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c14", id = "r15", after = "c14", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c16", after = "r15", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c16", id = "r17", after = "c16", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c13", id = "r18", after = "r17", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "usertimeline", to = "poststorage", id = "c19", after = "r6", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c20", after = "c19", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c20", id = "r21", after = "c20", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c22", after = "r21", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c22", id = "r23", after = "c22", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c19", id = "r24", after = "r23", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "usertimeline", to = "poststorage", id = "c25", after = ["r12", "r18", "r24"], delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c26", after = "c25", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c26", id = "r27", after = "c26", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c28", after = "r27", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c28", id = "r29", after = "c28", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c25", id = "r30", after = "r29", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "call", from = "usertimeline", to = "poststorage", id = "c31", after = ["r12", "r18", "r24"], delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "poststorage", to = "memcached", id = "c32", after = "c31", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c32", id = "r33", after = "c32", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "poststorage", to = "mongodb", id = "c34", after = "r33", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c34", id = "r35", after = "c34", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "ret", ret = "c31", id = "r36", after = "r35", delay = [{ mean = "1.2ms", sd = "0.4ms", weight = 0.8 }, { mean = "4.8ms", sd = "2.4ms", weight = 0.15 }, { mean = "18ms", sd = "9ms", weight = 0.05 }] },
  { op = "ret", ret = "c2", id = "r37", after = ["r30", "r36"], delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "call", from = "nginx", to = "user", id = "c38", after = "r37", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "user", to = "memcached", id = "c39", after = "c38", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c39", id = "r40", after = "c39", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c38", id = "r41", after = "r40", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r42", after = "r41", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
]

# follow a user: the social graph updates both users in parallel, each in cache and database, then the home timeline is rebuilt (12 RPCs)
[[tracelet]]
name = "follow"
instances = 1
think = ["60ms", "120ms"]
steps = [
  { op = "call", from = "CLIENT", to = "nginx", id = "c1" },
  { op = "call", from = "nginx", to = "user", id = "c2", after = "c1", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "user", to = "memcached", id = "c3", after = "c2", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c3", id = "r4", after = "c3", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c2", id = "r5", after = "r4", delay = [{ mean = "0.6ms", sd = "0.2ms", weight = 0.8 }, { mean = "2.4ms", sd = "1.2ms", weight = 0.15 }, { mean = "9ms", sd = "4.5ms", weight = 0.05 }] },
  { op = "call", from = "nginx", to = "socialgraph", id = "c6", after = "r5", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "socialgraph", to = "mongodb", id = "c7", after = "c6", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c7", id = "r8", after = "c7", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "socialgraph", to = "mongodb", id = "c9", after = "c6", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c9", id = "r10", after = "c9", delay = [{ mean = "2ms", sd = "0.667ms", weight = 0.8 }, { mean = "8ms", sd = "4ms", weight = 0.15 }, { mean = "30ms", sd = "15ms", weight = 0.05 }] },
  { op = "call", from = "socialgraph", to = "memcached", id = "c11", after = ["r8", "r10"], delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c11", id = "r12", after = "c11", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "call", from = "socialgraph", to = "memcached", id = "c13", after = "r12", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c13", id = "r14", after = "c13", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c6", id = "r15", after = "r14", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "nginx", to = "hometimeline", id = "c16", after = "r15", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "hometimeline", to = "socialgraph", id = "c17", after = "c16", delay = "0.05ms", sd = "0.0125ms" },
  { op = "call", from = "socialgraph", to = "memcached", id = "c18", after = "c17", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c18", id = "r19", after = "c18", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c17", id = "r20", after = "r19", delay = [{ mean = "1.5ms", sd = "0.5ms", weight = 0.8 }, { mean = "6ms", sd = "3ms", weight = 0.15 }, { mean = "22.5ms", sd = "11.2ms", weight = 0.05 }] },
  { op = "call", from = "hometimeline", to = "memcached", id = "c21", after = "r20", delay = "0.05ms", sd = "0.0125ms" },
  { op = "ret", ret = "c21", id = "r22", after = "c21", delay = [{ mean = "0.15ms", sd = "0.05ms", weight = 0.8 }, { mean = "0.6ms", sd = "0.3ms", weight = 0.15 }, { mean = "2.25ms", sd = "1.12ms", weight = 0.05 }] },
  { op = "ret", ret = "c16", id = "r23", after = "r22", delay = [{ mean = "1ms", sd = "0.333ms", weight = 0.8 }, { mean = "4ms", sd = "2ms", weight = 0.15 }, { mean = "15ms", sd = "7.5ms", weight = 0.05 }] },
  { op = "ret", ret = "c1", id = "r24", after = "r23", delay = [{ mean = "0.5ms", sd = "0.167ms", weight = 0.8 }, { mean = "2ms", sd = "1ms", weight = 0.15 }, { mean = "7.5ms", sd = "3.75ms", weight = 0.05 }] },
]
)toml";

constexpr Scenario kScenarios[] = {
    {"multitier",
     "Project 5 Figure 10: CLIENT -> WS1/WS2 -> AUTH, AP1/AP2 -> DB; 42 loops, "
     "~200,000 messages in 500 s, 34 path patterns"},
    {"multitier-added-delay",
     "multitier with 200 ms added at WS2 between the AUTH return and "
     "the AP call; same instances and counts"},
    {"multitier-wan",
     "multitier with two timestamps: network delays, clock offsets, 10,000 untraced "
     "clients"},
    {"wide-area",
     "WAP5 §6: a Coral/CoDeeN-like CDN; proxies, DNS, origins, DHT; one-way delays, "
     "clock offsets, untraced clients and servers; a 0.1% rare path"},
    {"children-parallel", "Figure 18: B calls C twice in parallel"},
    {"children-0-2", "Figure 18: B calls C twice in series, or not at all"},
    {"children-d-cc", "Figure 18: B calls C twice in series, or D once"},
    {"penalty-breaker",
     "Figure 18: B calls C twice or three times with identical delays, or not "
     "at all"},
    {"email",
     "mail relays over 19 nodes and 48 h: MSG hops, mostly at once, some after 10-15 s; "
     "frequent and rare routes"},
    {"shop",
     "microservices: an online shop (Go/gRPC demo shape), 12-21 RPCs per request, many "
     "repeated sequential calls; --parallelism N ~ N requests in flight"},
    {"booking",
     "microservices: train-ticket booking (Java benchmark shape), 11-30 RPCs, deep "
     "sequential chains; --parallelism N ~ N in flight"},
    {"social",
     "microservices: a social network (DeathStarBench shape), 12-24 RPCs, parallel "
     "fan-outs; --parallelism N ~ N in flight"},
};

std::string Replace(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string_view::npos;
       pos = hit + from.size()) {
    out.append(text.substr(pos, hit - pos));
    out.append(to);
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace

std::span<const Scenario> BuiltinScenarios() { return kScenarios; }

Result<std::string> ScenarioConfigText(std::string_view name) {
  if (name == "multitier") {
    return Replace(Replace(kMultitier, "%EXTRA%", ""), "%HEADER%", "");
  }
  if (name == "multitier-added-delay") {
    std::string text = Replace(kMultitier, "%EXTRA%", ", extra = { WS2 = \"200ms\" }");
    return Replace(text, "%HEADER%",
                   "# multitier-added-delay: the same with 200 ms more at WS2 between the AUTH\n"
                   "# return and the AP call (the `extra` of each WS -> AP call). Extra delays\n"
                   "# do not move the loops' schedule, so with the same seed the instances,\n"
                   "# choices and counts equal multitier's exactly.\n");
  }
  if (name == "multitier-wan") {
    // At the paper's parallelism (Project 5 Figure 17; docs/nesting.md): 0.28 of
    // multitier's loops give the per-node parallelism of 1.6 that the paper measured.
    std::string text =
        Replace(Replace(kMultitier, "%EXTRA%", ""), "%HEADER%",
                "# multitier-wan: multitier with a network (the [network] table at the end),\n"
                "# at the paper's parallelism.\nparallelism = 0.28\n");
    return text + std::string(kMultitierNetwork);
  }
  if (name == "wide-area") return std::string(kWideArea);
  if (name == "children-parallel") return std::string(kChildrenParallel);
  if (name == "children-0-2") return std::string(kChildren02);
  if (name == "children-d-cc") return std::string(kChildrenDcc);
  if (name == "penalty-breaker") return std::string(kPenaltyBreaker);
  if (name == "email") return std::string(kEmail);
  if (name == "shop") return std::string(kShop);
  if (name == "booking") return std::string(kBooking);
  if (name == "social") return std::string(kSocial);
  std::vector<std::string_view> known;
  for (const Scenario& s : kScenarios) known.push_back(s.name);
  return Status::NotFound("unknown scenario '{}' (built-in: {}; or give a .toml file)", name,
                          fmt::join(known, ", "));
}

Result<GenConfig> LoadGenConfig(const std::string& scenario_or_path) {
  for (const Scenario& s : kScenarios) {
    if (s.name != scenario_or_path) continue;
    WEFT_ASSIGN_OR_RETURN(std::string text, ScenarioConfigText(s.name));
    return ParseGenConfig(text, fmt::format("{}.toml", s.name));
  }
  const bool looks_like_file = scenario_or_path == "-" ||
                               scenario_or_path.find('/') != std::string::npos ||
                               scenario_or_path.find('.') != std::string::npos;
  if (!looks_like_file) return ScenarioConfigText(scenario_or_path).status();
  WEFT_ASSIGN_OR_RETURN(std::string text, ReadFile(scenario_or_path));
  return ParseGenConfig(text, scenario_or_path == "-" ? "<stdin>" : scenario_or_path);
}

}  // namespace weft
