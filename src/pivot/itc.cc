// Interval tree clocks: the functions of the paper's §5 (norm, split, sum, fill, grow, leq,
// join), written over immutable shared nodes so that they read as the paper's equations.
#include "pivot/itc.h"

#include <algorithm>
#include <array>
#include <utility>

#include "pivot/varint.h"

namespace weft::pivot::itc {

struct IdNode {
  bool leaf = true;
  bool one = false;  // leaf: owns its whole subinterval
  IdTree l, r;       // node
};

struct EventNode {
  uint64_t n = 0;
  EventTree l, r;  // both set for a node, both null for a leaf
  bool leaf() const { return l == nullptr; }
};

namespace {

// ---- id trees ----

// The leaves every stamp starts from are shared per thread, not per process: copying a
// process-wide one from every thread bounced its reference count between cores on each
// request of a multi-threaded server. Leaves are compared by value, never by address.
const IdTree& IdLeaf(bool one) {
  thread_local const IdTree zero = std::make_shared<const IdNode>(IdNode{true, false, {}, {}});
  thread_local const IdTree all = std::make_shared<const IdNode>(IdNode{true, true, {}, {}});
  return one ? all : zero;
}
bool IsZero(const IdTree& i) { return i->leaf && !i->one; }
bool IsOne(const IdTree& i) { return i->leaf && i->one; }

// A node in normal form: (0, 0) is 0 and (1, 1) is 1.
IdTree IdNodeOf(IdTree l, IdTree r) {
  if (l->leaf && r->leaf && l->one == r->one) return IdLeaf(l->one);
  return std::make_shared<const IdNode>(IdNode{false, false, std::move(l), std::move(r)});
}

std::pair<IdTree, IdTree> SplitId(const IdTree& i) {
  if (IsZero(i)) return {i, i};
  if (IsOne(i)) {
    // A request's first split, once per call it makes: the halves are made once per thread.
    thread_local const IdTree left = IdNodeOf(IdLeaf(true), IdLeaf(false));
    thread_local const IdTree right = IdNodeOf(IdLeaf(false), IdLeaf(true));
    return {left, right};
  }
  if (IsZero(i->l)) {
    auto [a, b] = SplitId(i->r);
    return {IdNodeOf(IdLeaf(false), a), IdNodeOf(IdLeaf(false), b)};
  }
  if (IsZero(i->r)) {
    auto [a, b] = SplitId(i->l);
    return {IdNodeOf(a, IdLeaf(false)), IdNodeOf(b, IdLeaf(false))};
  }
  return {IdNodeOf(i->l, IdLeaf(false)), IdNodeOf(IdLeaf(false), i->r)};
}

// The union of two ids (the paper's sum, defined for disjoint ids; an overlap, which
// correct use never makes, is taken as the plain union).
IdTree SumId(const IdTree& a, const IdTree& b) {
  if (IsZero(a) || IsOne(b)) return b;
  if (IsZero(b) || IsOne(a)) return a;
  return IdNodeOf(SumId(a->l, b->l), SumId(a->r, b->r));
}

bool Overlap(const IdTree& a, const IdTree& b) {
  if (IsZero(a) || IsZero(b)) return false;
  if (a->leaf || b->leaf) return true;  // a 1 against something non-zero
  return Overlap(a->l, b->l) || Overlap(a->r, b->r);
}

// ---- event trees ----

// Leaves of small counts are made once per thread, as IdLeaf's are: a request's events
// count to a few, and its splits and joins make leaves of them again and again (about five
// allocations a request with one call, where a query packs).
constexpr uint64_t kSharedLeaves = 16;
EventTree Leaf(uint64_t n) {
  thread_local const std::array<EventTree, kSharedLeaves> small = [] {
    std::array<EventTree, kSharedLeaves> leaves;
    for (uint64_t k = 0; k < kSharedLeaves; ++k) {
      leaves[k] = std::make_shared<const EventNode>(EventNode{k, {}, {}});
    }
    return leaves;
  }();
  if (n < kSharedLeaves) return small[n];
  return std::make_shared<const EventNode>(EventNode{n, {}, {}});
}
EventTree RawNode(uint64_t n, EventTree l, EventTree r) {
  return std::make_shared<const EventNode>(EventNode{n, std::move(l), std::move(r)});
}

// In normal form every subtree's minimum is its own base n.
uint64_t Min(const EventTree& e) { return e->n; }
uint64_t Max(const EventTree& e) {
  if (e->leaf()) return e->n;
  return e->n + std::max(Max(e->l), Max(e->r));
}
EventTree Lift(const EventTree& e, uint64_t m) {
  if (m == 0) return e;
  if (e->leaf()) return Leaf(e->n + m);
  return RawNode(e->n + m, e->l, e->r);
}
EventTree Sink(const EventTree& e, uint64_t m) {
  if (m == 0) return e;
  if (e->leaf()) return Leaf(e->n - m);
  return RawNode(e->n - m, e->l, e->r);
}

// norm((n, l, r)) for normal l and r.
EventTree Norm(uint64_t n, EventTree l, EventTree r) {
  if (l->leaf() && r->leaf() && l->n == r->n) return Leaf(n + l->n);
  uint64_t m = std::min(Min(l), Min(r));
  return RawNode(n + m, Sink(l, m), Sink(r, m));
}

bool SameEvent(const EventTree& a, const EventTree& b) {
  if (a == b) return true;
  if (a->n != b->n || a->leaf() != b->leaf()) return false;
  return a->leaf() || (SameEvent(a->l, b->l) && SameEvent(a->r, b->r));
}

bool LeqEvent(const EventTree& a, const EventTree& b) {
  if (a->leaf()) return a->n <= b->n;
  if (a->n > b->n) return false;
  if (b->leaf()) {
    return LeqEvent(Lift(a->l, a->n), b) && LeqEvent(Lift(a->r, a->n), b);
  }
  return LeqEvent(Lift(a->l, a->n), Lift(b->l, b->n)) &&
         LeqEvent(Lift(a->r, a->n), Lift(b->r, b->n));
}

EventTree JoinEvent(const EventTree& a, const EventTree& b) {
  if (a->leaf() && b->leaf()) return Leaf(std::max(a->n, b->n));
  if (a->leaf()) return JoinEvent(RawNode(a->n, Leaf(0), Leaf(0)), b);
  if (b->leaf()) return JoinEvent(a, RawNode(b->n, Leaf(0), Leaf(0)));
  if (a->n > b->n) return JoinEvent(b, a);
  uint64_t d = b->n - a->n;
  return Norm(a->n, JoinEvent(a->l, Lift(b->l, d)), JoinEvent(a->r, Lift(b->r, d)));
}

// fill: raises the event tree inside id `i` as far as it can without inventing events,
// which simplifies it.
EventTree Fill(const IdTree& i, const EventTree& e) {
  if (IsZero(i)) return e;
  if (IsOne(i)) return Leaf(Max(e));
  if (e->leaf()) return e;
  if (IsOne(i->l)) {
    EventTree r = Fill(i->r, e->r);
    return Norm(e->n, Leaf(std::max(Max(e->l), Min(r))), r);
  }
  if (IsOne(i->r)) {
    EventTree l = Fill(i->l, e->l);
    return Norm(e->n, l, Leaf(std::max(Max(e->r), Min(l))));
  }
  return Norm(e->n, Fill(i->l, e->l), Fill(i->r, e->r));
}

// grow: inflates one count inside id `i`, preferring the change that adds fewest nodes.
// Returns the new tree and its cost.
constexpr uint64_t kExpandCost = uint64_t{1} << 20;
std::pair<EventTree, uint64_t> Grow(const IdTree& i, const EventTree& e) {
  if (IsOne(i)) {
    // Fill turns any tree under a 1 into a leaf, so grow only sees leaves here.
    return {Leaf(Max(e) + 1), 0};
  }
  if (e->leaf()) {
    auto [grown, cost] = Grow(i, RawNode(e->n, Leaf(0), Leaf(0)));
    return {grown, cost + kExpandCost};
  }
  if (IsZero(i->l)) {
    auto [r, cost] = Grow(i->r, e->r);
    return {Norm(e->n, e->l, r), cost + 1};
  }
  if (IsZero(i->r)) {
    auto [l, cost] = Grow(i->l, e->l);
    return {Norm(e->n, l, e->r), cost + 1};
  }
  auto [l, cl] = Grow(i->l, e->l);
  auto [r, cr] = Grow(i->r, e->r);
  if (cl < cr) return {Norm(e->n, l, e->r), cl + 1};
  return {Norm(e->n, e->l, r), cr + 1};
}

// ---- encoding ----

void EncodeId(const IdTree& i, std::string& out) {
  if (i->leaf) {
    out.push_back(i->one ? 1 : 0);
    return;
  }
  out.push_back(2);
  EncodeId(i->l, out);
  EncodeId(i->r, out);
}

void EncodeEventTree(const EventTree& e, std::string& out) {
  PutVarint(out, e->n * 2 + (e->leaf() ? 0 : 1));
  if (!e->leaf()) {
    EncodeEventTree(e->l, out);
    EncodeEventTree(e->r, out);
  }
}

constexpr uint64_t kMaxCount = uint64_t{1} << 62;

struct Reader : ByteReader {
  using ByteReader::ByteReader;
  // Minimal LEB128 only, so that every stamp has one encoding.
  bool Varint(uint64_t& v) { return ByteReader::Varint(v, /*minimal=*/true); }

  bool Id(int depth, IdTree& out) {
    uint8_t b;
    if (depth > kMaxDepth || !Byte(b) || b > 2) return false;
    if (b < 2) {
      out = IdLeaf(b == 1);
      return true;
    }
    IdTree l, r;
    if (!Id(depth + 1, l) || !Id(depth + 1, r)) return false;
    if (l->leaf && r->leaf && l->one == r->one) return false;  // not normal
    out = std::make_shared<const IdNode>(IdNode{false, false, std::move(l), std::move(r)});
    return true;
  }

  // `base` is the sum of the counts above, which must stay below kMaxCount.
  bool Event(int depth, uint64_t base, EventTree& out) {
    uint64_t v;
    if (depth > kMaxDepth || !Varint(v)) return false;
    uint64_t n = v >> 1;
    if (n >= kMaxCount - base) return false;
    if ((v & 1) == 0) {
      out = Leaf(n);
      return true;
    }
    EventTree l, r;
    if (!Event(depth + 1, base + n, l) || !Event(depth + 1, base + n, r)) return false;
    if (std::min(l->n, r->n) != 0) return false;               // not normal: min not lifted
    if (l->leaf() && r->leaf() && l->n == r->n) return false;  // not normal: (n, 0, 0)
    out = RawNode(n, std::move(l), std::move(r));
    return true;
  }
};

void IdString(const IdTree& i, std::string& out) {
  if (i->leaf) {
    out += i->one ? "1" : "0";
    return;
  }
  out += "(";
  IdString(i->l, out);
  out += ", ";
  IdString(i->r, out);
  out += ")";
}

void EventString(const EventTree& e, std::string& out) {
  if (e->leaf()) {
    out += std::to_string(e->n);
    return;
  }
  out += "(" + std::to_string(e->n) + ", ";
  EventString(e->l, out);
  out += ", ";
  EventString(e->r, out);
  out += ")";
}

// ---- memos ----

// Every operation is a pure function of immutable trees, and a request repeats the same few
// stamps: each call of a server forks the same stamp and joins back the same reply, each
// receiver decodes the same bytes (fork, join, event and decode are remembered). Each thread
// remembers its last results in small direct-mapped tables, so that a repeat costs a lookup instead
// of building (and later freeing) nodes: about 4,000 instructions a request with one call where a
// query packs. An entry holds its inputs' trees, so their addresses, the key, cannot be reused for
// other trees while it lives; a collision replaces the entry.
constexpr int kMemoBits = 6;
constexpr size_t kMemoSlots = size_t{1} << kMemoBits;
size_t MemoSlot(const void* a, const void* b, const void* c = nullptr, const void* d = nullptr) {
  uint64_t h = uint64_t(uintptr_t(a)) * 0x9e3779b97f4a7c15ull;
  h ^= uint64_t(uintptr_t(b)) * 0xbf58476d1ce4e5b9ull;
  h ^= uint64_t(uintptr_t(c)) * 0x94d049bb133111ebull;
  h ^= uint64_t(uintptr_t(d)) * 0xd6e8feb86659fd93ull;
  return size_t(h >> (64 - kMemoBits));  // the product's best-mixed bits
}
constexpr size_t kMemoBytes = 15;  // what a std::string keeps without allocating

struct ForkMemo {
  IdTree id, mine, theirs;
};
struct EventMemo {
  IdTree id;
  EventTree before, after;
};
struct JoinMemo {
  IdTree id_a, id_b, id;
  EventTree event_a, event_b, event;
};
struct DecodeMemo {
  std::string bytes;  // at most kMemoBytes
  IdTree id;
  EventTree event;
};

}  // namespace

Stamp Stamp::Seed() { return Stamp(IdLeaf(true), Leaf(0)); }
Stamp Stamp::Peek(const Stamp& s) { return Stamp(IdLeaf(false), s.event_); }
Stamp::Stamp() : id_(IdLeaf(true)), event_(Leaf(0)) {}

Stamp Stamp::Fork() {
  thread_local std::array<ForkMemo, kMemoSlots> memo;
  ForkMemo& m = memo[MemoSlot(id_.get(), nullptr)];
  if (m.id != id_) {
    auto [mine, theirs] = SplitId(id_);
    m = {id_, std::move(mine), std::move(theirs)};
  }
  id_ = m.mine;
  return Stamp(m.theirs, event_);
}

void Stamp::Join(const Stamp& other) {
  thread_local std::array<JoinMemo, kMemoSlots> memo;
  JoinMemo& m = memo[MemoSlot(id_.get(), event_.get(), other.id_.get(), other.event_.get())];
  if (m.id_a != id_ || m.event_a != event_ || m.id_b != other.id_ || m.event_b != other.event_) {
    m = {id_,    other.id_,    SumId(id_, other.id_),
         event_, other.event_, JoinEvent(event_, other.event_)};
  }
  id_ = m.id;
  event_ = m.event;
}

bool Stamp::Event() {
  if (IsZero(id_)) return false;
  thread_local std::array<EventMemo, kMemoSlots> memo;
  EventMemo& m = memo[MemoSlot(id_.get(), event_.get())];
  if (m.id != id_ || m.before != event_) {
    EventTree filled = Fill(id_, event_);
    m = {id_, event_, SameEvent(filled, event_) ? Grow(id_, event_).first : std::move(filled)};
  }
  event_ = m.after;
  return true;
}

bool Stamp::Leq(const Stamp& other) const { return LeqEvent(event_, other.event_); }

bool Stamp::operator==(const Stamp& other) const {
  return Encode() == other.Encode();  // normal forms are unique
}

bool Stamp::anonymous() const { return IsZero(id_); }

bool Stamp::IdsOverlap(const Stamp& a, const Stamp& b) { return Overlap(a.id_, b.id_); }

void Stamp::Encode(std::string& out) const {
  EncodeId(id_, out);
  EncodeEventTree(event_, out);
}

std::string Stamp::Encode() const {
  std::string out;
  Encode(out);
  return out;
}

void Stamp::EncodeEvent(std::string& out) const { EncodeEventTree(event_, out); }

Result<Stamp> Stamp::Decode(std::string_view bytes) {
  thread_local std::array<DecodeMemo, kMemoSlots> memo;
  DecodeMemo& m = memo[std::hash<std::string_view>{}(bytes) % kMemoSlots];
  if (m.id != nullptr && m.bytes == bytes) return Stamp(m.id, m.event);
  Reader r(bytes);
  IdTree id;
  if (!r.Id(0, id))
    return Status::Corruption("interval tree clock: bad id tree at byte {}", r.at());
  EventTree event;
  if (!r.Event(0, 0, event)) {
    return Status::Corruption("interval tree clock: bad event tree at byte {}", r.at());
  }
  if (r.at() != bytes.size()) {
    return Status::Corruption("interval tree clock: {} bytes after the stamp",
                              bytes.size() - r.at());
  }
  if (bytes.size() <= kMemoBytes) m = {std::string(bytes), id, event};
  return Stamp(std::move(id), std::move(event));
}

std::string Stamp::ToString() const {
  std::string out = "(";
  IdString(id_, out);
  out += ", ";
  EventString(event_, out);
  out += ")";
  return out;
}

}  // namespace weft::pivot::itc
