// The live baggage: naming instances with interval tree clock events, the binary form and
// its lazy, bounded decoder (the format is in baggage.h).
#include "pivot/baggage.h"

#include <pthread.h>
#include <sys/random.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <utility>

#include "pivot/varint.h"

namespace weft::pivot {

BaggageCounters& GlobalBaggageCounters() {
  static BaggageCounters counters;
  return counters;
}

namespace {

using query::BaggageInstance;
using query::PackedTuples;
using query::PartialAggregate;
using query::Value;
using query::ValueType;

enum : uint8_t { kValueNull = 0, kValueInt = 1, kValueFloat = 2, kValueString = 3 };
enum : uint8_t { kFrozenInstance = 0, kActiveInstance = 1 };

uint64_t HashName(std::string_view name) { return std::hash<std::string_view>{}(name); }

// ---- origins ----

// Forks seen by this process: a thread's generator draws anew after one, or a child and
// its parent would hand out the same origins.
std::atomic<uint32_t> g_forks{0};
void CountFork() { g_forks.fetch_add(1, std::memory_order_relaxed); }

uint64_t Mix(uint64_t z) {  // splitmix64's finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A random 64-bit origin for a new lineage: a counter per thread, its start drawn from the
// kernel's entropy (the time and the thread's address if that fails), whitened.
uint64_t NewOrigin() {
  static const int atfork = pthread_atfork(nullptr, nullptr, &CountFork);
  (void)atfork;
  thread_local uint64_t next = 0;
  thread_local uint32_t forks = UINT32_MAX;
  const uint32_t now = g_forks.load(std::memory_order_relaxed);
  if (forks != now) {
    forks = now;
    if (getrandom(&next, sizeof next, GRND_NONBLOCK) != ssize_t(sizeof next)) {
      timespec t{};
      clock_gettime(CLOCK_MONOTONIC, &t);
      next = Mix(uint64_t(t.tv_nsec) ^ (uint64_t(t.tv_sec) << 32) ^ uint64_t(uintptr_t(&next)));
    }
  }
  const uint64_t origin = Mix(next += 0x9e3779b97f4a7c15ull);
  return origin != 0 ? origin : 1;
}

void PutOrigin(std::string& out, uint64_t origin) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = char(uint8_t(origin >> (8 * i)));
  out.append(buf, 8);
}

// ---- encoding ----

uint64_t ZigZag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
int64_t UnZigZag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }
void PutDouble(std::string& out, double d) {
  uint64_t bits = std::bit_cast<uint64_t>(d);
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = char(uint8_t(bits >> (8 * i)));
  out.append(buf, 8);
}

// A multiplicity is almost always a small whole number (1 unless grouped tuples merged):
// then one varint of 2*m, else 1 and the double.
constexpr double kWholeLimit = double(uint64_t{1} << 52);
void PutMultiplicity(std::string& out, double m) {
  if (m >= 0 && m < kWholeLimit && m == std::floor(m) && !std::signbit(m)) {
    PutVarint(out, uint64_t(m) * 2);
  } else {
    out.push_back(1);
    PutDouble(out, m);
  }
}

void PutValue(std::string& out, const Value& v) {
  switch (v.type) {
    case ValueType::kNull:
      out.push_back(char(kValueNull));
      return;
    case ValueType::kInt:
      out.push_back(char(kValueInt));
      PutVarint(out, ZigZag(v.i));
      return;
    case ValueType::kFloat:
      out.push_back(char(kValueFloat));
      PutDouble(out, v.f);
      return;
    case ValueType::kString: {
      // Longer strings than a decoder accepts are cut: a view into the program's memory
      // may be any size, and a header that every receiver refuses would lose all tuples.
      std::string_view s = v.s.substr(0, kMaxStringBytes);
      out.push_back(char(kValueString));
      PutVarint(out, s.size());
      out.append(s);
      return;
    }
  }
}

void PutSlots(std::string& out, const std::vector<PackedTuples>& slots) {
  size_t used = slots.size();
  while (used > 0 && slots[used - 1].size() == 0) --used;
  PutVarint(out, used);
  for (size_t s = 0; s < used; ++s) {
    const PackedTuples& t = slots[s];
    if (t.size() == 0) {
      out.append(3, '\0');
      continue;
    }
    PutVarint(out, t.width);
    PutVarint(out, t.partials);
    PutVarint(out, t.size());
    // The columns' data once: an inline column asks where its data is at every access.
    const Value* v = t.values.data();
    const PartialAggregate* p = t.parts.data();
    const double* mult = t.mult.data();
    const int64_t* order = t.order.data();
    for (size_t i = 0; i < t.size(); ++i) {
      for (uint32_t w = 0; w < t.width; ++w) PutValue(out, *v++);
      for (uint32_t k = 0; k < t.partials; ++k, ++p) {
        PutDouble(out, p->sum);
        PutDouble(out, p->weight);
        PutValue(out, p->min);
        PutValue(out, p->max);
      }
      PutMultiplicity(out, mult[i]);
      PutVarint(out, ZigZag(order[i]));
    }
  }
}

// ---- decoding: every read is bounded by what is left ----

// The baggage's reader: values, multiplicities and bounded counts on top of bytes and
// varints.
class Reader : public ByteReader {
 public:
  using ByteReader::ByteReader;

  bool Bounded(uint64_t max, uint64_t& v) { return Varint(v) && v <= max; }
  bool Double(double& d) {
    if (left() < 8) return false;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= uint64_t(uint8_t(in_[at_ + size_t(i)])) << (8 * i);
    at_ += 8;
    d = std::bit_cast<double>(bits);
    return true;
  }
  bool Multiplicity(double& m) {
    uint64_t v;
    if (!Varint(v)) return false;
    if ((v & 1) == 0) {
      m = double(v >> 1);
      return true;
    }
    return v == 1 && Double(m);
  }
  bool ValueOf(Value& v) {
    uint8_t tag;
    if (!Byte(tag)) return false;
    switch (tag) {
      case kValueNull:
        v = Value::Null();
        return true;
      case kValueInt: {
        uint64_t z;
        if (!Varint(z)) return false;
        v = Value::Int(UnZigZag(z));
        return true;
      }
      case kValueFloat: {
        double d;
        if (!Double(d)) return false;
        v = Value::Float(d);
        return true;
      }
      case kValueString: {
        uint64_t n;
        std::string_view s;
        if (!Bounded(kMaxStringBytes, n) || !Bytes(size_t(n), s)) return false;
        v = Value::String(s);
        return true;
      }
      default:
        return false;
    }
  }
};

Status Bad(const Reader& r, std::string_view what) {
  return Status::Corruption("baggage: {} at byte {}", what, r.at());
}

Status ReadSlots(Reader& r, std::vector<PackedTuples>& slots) {
  uint64_t count;
  if (!r.Bounded(kMaxSlots, count) || count > r.left() / 3) return Bad(r, "bad slot count");
  slots.resize(size_t(count));
  for (PackedTuples& t : slots) {
    uint64_t width, partials, tuples;
    if (!r.Bounded(kMaxWidth, width) || !r.Bounded(kMaxWidth, partials) ||
        !r.Bounded(kMaxTuples, tuples)) {
      return Bad(r, "bad slot header");
    }
    // Each tuple takes at least a byte per value, 18 per partial and 2 for mult and
    // order: refuse counts the bytes left cannot hold before allocating for them.
    uint64_t least = width + partials * 18 + 2;
    if (tuples > r.left() / least) return Bad(r, "more tuples than bytes");
    t.width = uint32_t(width);
    t.partials = uint32_t(partials);
    if (tuples == 0) {  // the usual slot: another query's, empty (`slots` may be reused)
      t.values.clear();
      t.parts.clear();
      t.mult.clear();
      t.order.clear();
      continue;
    }
    t.values.resize(size_t(tuples * width));
    t.parts.resize(size_t(tuples * partials));
    t.mult.resize(size_t(tuples));
    t.order.resize(size_t(tuples));
    Value* v = t.values.data();
    PartialAggregate* p = t.parts.data();
    double* mult = t.mult.data();
    int64_t* order = t.order.data();
    for (size_t i = 0; i < tuples; ++i) {
      for (size_t w = 0; w < width; ++w) {
        if (!r.ValueOf(*v++)) return Bad(r, "bad value");
      }
      for (size_t k = 0; k < partials; ++k, ++p) {
        if (!r.Double(p->sum) || !r.Double(p->weight) || !r.ValueOf(p->min) || !r.ValueOf(p->max)) {
          return Bad(r, "bad partial aggregate");
        }
      }
      uint64_t zigzag;
      if (!r.Multiplicity(mult[i]) || !r.Varint(zigzag)) return Bad(r, "bad tuple");
      order[i] = UnZigZag(zigzag);
    }
  }
  return Status::Ok();
}

}  // namespace

namespace {

// The states kept by this thread for the next baggages made on it. Trivially destructible,
// so that a baggage ending after the thread's destructors ran (a thread_local one) still
// finds it: `closed` then says to free its state.
struct KeptStates {
  void* states[4];
  int count;
  bool closed;
  void (*free)(void*);  // deletes a kept state (their type is Baggage's own)
};
constinit thread_local KeptStates t_kept{};

// Frees what is kept when the thread ends, and closes the list.
struct KeptStatesCloser {
  ~KeptStatesCloser();
};

}  // namespace

Baggage::State* Baggage::NewState() {
  if (t_kept.count == 0) return new State();
  return static_cast<State*>(t_kept.states[--t_kept.count]);
}

void Baggage::EndState::operator()(State* state) const {
  if (t_kept.closed || t_kept.count == int(std::size(t_kept.states))) {
    delete state;
    return;
  }
  thread_local KeptStatesCloser closer;  // made on this thread's first keep
  (void)closer;
  t_kept.free = [](void* kept) { delete static_cast<State*>(kept); };
  state->Reset();
  t_kept.states[t_kept.count++] = state;
}

void Baggage::State::Reset() {
  origin = 0;
  stamp.reset();
  contents.Reset();
  decoded = true;
  bytes.reset();
  if (!decode_status.ok()) decode_status = Status::Ok();
  arrived = 0;
  storage.clear();
}

KeptStatesCloser::~KeptStatesCloser() {
  t_kept.closed = true;
  while (t_kept.count > 0) t_kept.free(t_kept.states[--t_kept.count]);
}

const Status& Baggage::decode_status() const {
  static const Status ok;
  return state_ ? state_->decode_status : ok;
}

std::string_view Baggage::Intern(std::string_view s) {
  Storage& storage = Made().storage;
  storage.push_back(std::make_shared<const std::string>(s));
  return *storage.back();
}

void Baggage::Share(const Storage& storage) {
  Storage& mine = Made().storage;
  for (const auto& block : storage) {
    if (std::find(mine.begin(), mine.end(), block) == mine.end()) mine.push_back(block);
  }
}

void Baggage::Seed() const {
  State& s = *state_;
  if (s.origin != 0) return;
  s.origin = NewOrigin();
  s.stamp = itc::Stamp::Seed();
}

void Baggage::NameActive() {
  if (!state_ || state_->contents.active().Tuples() == 0) return;
  State& s = *state_;
  Seed();
  s.stamp->Event();  // never anonymous: Deserialize refuses id 0 and Fork never makes it
  std::string name;
  PutOrigin(name, s.origin);
  s.stamp->EncodeEvent(name);
  uint64_t id = HashName(name);
  s.contents.NameActive(id, std::move(name));
}

Baggage Baggage::Split() {
  if (!state_) return Baggage();
  State& s = *state_;
  if (!s.decoded) DecodeNow();
  // With nothing to share, the branch starts a lineage of its own: no fork, and its join
  // back (of nothing, or of tuples named with its origin) needs no stamp either.
  if (s.HoldsNothing()) return Baggage();
  NameActive();
  Seed();  // frozen instances joined in from another lineage, nothing packed here yet
  Baggage branch;
  State& b = branch.Made();
  s.contents.SplitInto(b.contents);
  b.origin = s.origin;
  b.stamp = s.stamp->Fork();
  b.storage = s.storage;
  return branch;
}

void Baggage::Join(Baggage&& branch) {
  // A branch with nothing in it (a reply sent as no bytes, a branch split from nothing) is
  // always of another lineage: a branch split from this one holds its frozen instances.
  if (!branch.state_) return;
  State& b = *branch.state_;
  if (b.decoded && b.HoldsNothing()) {
    branch.Clear();
    return;
  }
  State& s = Made();
  if (!s.decoded) DecodeNow();
  // The branch's instances this side holds already are left out of its decode: the join
  // would drop them.
  if (!b.decoded) branch.DecodeNow(&s.contents);
  branch.NameActive();
  s.contents.Join(std::move(b.contents));
  // A branch of another lineage (it started from nothing in another process) named its
  // instances with its own origin; its stamp's id is not disjoint from this one's, so it
  // is not joined in (baggage.h, "Naming instances").
  // An unseeded side is a lineage of its own (origins are never 0): nothing to join.
  if (b.origin == s.origin && s.origin != 0) s.stamp->Join(*b.stamp);
  Share(b.storage);
  branch.Clear();
}

void Baggage::SplitSerializeTo(std::string& out) {
  if (!state_) return;  // sent as nothing
  State& s = *state_;
  if (!s.decoded) DecodeNow();
  if (s.HoldsNothing()) return;
  NameActive();
  Seed();
  // The branch Split would make holds the frozen instances and a fork of the stamp; this
  // side's contents, its active instance now empty, serialize alike.
  thread_local query::Baggage branch;  // only to freeze into; its capacity is kept
  s.contents.SplitInto(branch);
  branch.Clear();
  SerializeDecoded(out, s.origin, s.stamp->Fork(), s.contents);
}

void Baggage::SerializeTo(std::string& out) const {
  if (!state_) return;  // nothing to carry
  const State& s = *state_;
  if (!s.decoded) {
    out += *s.bytes;
    return;
  }
  if (s.HoldsNothing()) return;
  Seed();
  SerializeDecoded(out, s.origin, *s.stamp, s.contents);
}

void Baggage::SerializeReplyTo(std::string& out) const {
  // Untouched, or nothing came with it to leave out.
  if (!state_ || !state_->decoded || state_->arrived == 0) {
    SerializeTo(out);
    return;
  }
  const State& s = *state_;
  Seed();
  SerializeDecoded(out, s.origin, *s.stamp, s.contents, s.arrived);
}

void Baggage::SerializeDecoded(std::string& out, uint64_t origin, const itc::Stamp& stamp,
                               const query::Baggage& contents, size_t skip) {
  // The stamp is encoded in place after a one-byte size, moved in the rare case that its
  // size needs a longer varint.
  size_t start = out.size();
  // One allocation for the usual baggage rather than a doubling per few tuples: a guess of
  // its size (the stamp, an instance's name and a tuple of a few values are tens of bytes).
  out.reserve(start + 48 + 32 * (contents.frozen().size() + contents.tuples()));
  out.push_back(char(kBaggageFormatVersion));
  PutOrigin(out, origin);
  const size_t size_at = out.size();
  out.push_back(0);
  stamp.Encode(out);
  size_t stamp_size = out.size() - size_at - 1;
  if (stamp_size < 0x80) {
    out[size_at] = char(stamp_size);
  } else {
    std::string size;
    PutVarint(size, stamp_size);
    out.replace(size_at, 1, size);
  }
  bool active = contents.active().Tuples() > 0;
  const auto frozen = std::span(contents.frozen()).subspan(skip);
  PutVarint(out, frozen.size() + (active ? 1 : 0));
  for (const auto& instance : frozen) {
    out.push_back(char(kFrozenInstance));
    PutVarint(out, instance->name.size());
    out += instance->name;
    PutSlots(out, instance->slots);
  }
  if (active) {
    out.push_back(char(kActiveInstance));
    PutSlots(out, contents.active().slots);
  }
}

std::string Baggage::Serialize() const {
  std::string out;
  SerializeTo(out);
  return out;
}

std::string Baggage::SerializeReply() const {
  std::string out;
  SerializeReplyTo(out);
  return out;
}

Result<bool> Baggage::Accept(std::string_view bytes) {
  Clear();
  if (bytes.empty()) return false;
  if (bytes.size() > kMaxSerializedBytes || uint8_t(bytes[0]) != kBaggageFormatVersion) {
    GlobalBaggageCounters().deserialize_rejected.fetch_add(1, std::memory_order_relaxed);
    if (bytes.size() > kMaxSerializedBytes) {
      return Status::Corruption("baggage: {} bytes, more than {}", bytes.size(),
                                kMaxSerializedBytes);
    }
    return Status::Corruption("baggage: format version {}, not {}", uint8_t(bytes[0]),
                              kBaggageFormatVersion);
  }
  Made().decoded = false;
  return true;
}

Status Baggage::Deserialize(std::string_view bytes) {
  WEFT_ASSIGN_OR_RETURN(bool keep, Accept(bytes));
  if (keep) state_->bytes = std::make_shared<const std::string>(bytes);
  return Status::Ok();
}

Status Baggage::DeserializeOwned(std::string&& bytes) {
  WEFT_ASSIGN_OR_RETURN(bool keep, Accept(bytes));
  if (keep) state_->bytes = std::make_shared<const std::string>(std::move(bytes));
  return Status::Ok();
}

Status Baggage::Decode() {
  if (!state_) return Status::Ok();
  if (!state_->decoded) DecodeNow();
  return state_->decode_status;
}

void Baggage::DecodeNow(const query::Baggage* known) {
  state_->decoded = true;
  Status status = DecodeBytes(known);
  if (!status.ok()) {
    GlobalBaggageCounters().decode_rejected.fetch_add(1, std::memory_order_relaxed);
    state_->Reset();  // in place: the callers hold references into it
    state_->decode_status = std::move(status);
  }
}

Status Baggage::DecodeBytes(const query::Baggage* known) {
  State& s = *state_;
  Reader r(*s.bytes);
  uint8_t version;
  std::string_view origin_bytes;
  if (!r.Byte(version) || !r.Bytes(8, origin_bytes)) return Bad(r, "no origin");
  uint64_t origin = 0;
  for (int i = 0; i < 8; ++i) origin |= uint64_t(uint8_t(origin_bytes[size_t(i)])) << (8 * i);
  uint64_t stamp_size;
  std::string_view stamp_bytes;
  if (!r.Bounded(kMaxStampBytes, stamp_size) || !r.Bytes(size_t(stamp_size), stamp_bytes)) {
    return Bad(r, "bad stamp size");
  }
  auto stamp = itc::Stamp::Decode(stamp_bytes);
  if (!stamp.ok()) return stamp.status().WithContext("baggage");
  if (stamp->anonymous()) return Bad(r, "anonymous stamp");
  uint64_t count;
  if (!r.Bounded(kMaxInstances, count) || count > r.left() / 2) {
    return Bad(r, "bad instance count");
  }
  query::Baggage::FrozenInstances frozen;  // not reserved: most are known, or active
  BaggageInstance active;
  for (uint64_t k = 0; k < count; ++k) {
    uint8_t kind;
    if (!r.Byte(kind) || kind > kActiveInstance) return Bad(r, "bad instance kind");
    if (kind == kActiveInstance) {
      if (k + 1 != count) return Bad(r, "active instance not last");
      WEFT_RETURN_IF_ERROR(ReadSlots(r, active.slots));
      continue;
    }
    uint64_t name_size;
    std::string_view name;
    if (!r.Bounded(kMaxNameBytes, name_size) || name_size == 0 ||
        !r.Bytes(size_t(name_size), name)) {
      return Bad(r, "bad instance name");
    }
    const uint64_t id = HashName(name);
    if (known != nullptr &&
        std::any_of(known->frozen().begin(), known->frozen().end(),
                    [&](const auto& i) { return i->id == id && i->name == name; })) {
      // The joining side has it already (sent down with the call, back with the reply):
      // checked as any other, but into scratch space that keeps its allocations.
      thread_local std::vector<PackedTuples> skipped;
      WEFT_RETURN_IF_ERROR(ReadSlots(r, skipped));
      continue;
    }
    auto instance = std::make_shared<BaggageInstance>();
    instance->name = std::string(name);
    instance->id = id;
    WEFT_RETURN_IF_ERROR(ReadSlots(r, instance->slots));
    frozen.push_back(std::move(instance));
  }
  if (r.left() != 0) return Bad(r, "bytes after the baggage");
  s.origin = origin;
  s.stamp = std::move(*stamp);
  s.arrived = uint32_t(frozen.size());
  s.contents.Restore(std::move(frozen), std::move(active));
  s.storage.push_back(std::move(s.bytes));
  s.bytes.reset();
  return Status::Ok();
}

}  // namespace weft::pivot
