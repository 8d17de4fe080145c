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
