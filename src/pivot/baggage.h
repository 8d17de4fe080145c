// The live baggage (Pivot Tracing §4 "Baggage", §5 "Branches and Versioning", Table 4):
// the offline model of query/baggage.h (versioned instances of packed tuples) plus an
// interval tree clock stamp (pivot/itc.h) that names its instances, a binary form for
// message headers, and lazy decoding.
//
// Table 4 on this class:
//   pack, unpack   through Contents(): the advice interpreter works on query::Baggage&.
//   serialize      Serialize()
//   deserialize    Deserialize(bytes)
//   split          Split(): this baggage keeps one side, the result is the other branch.
//   join           Join(branch)
// The thread-local current baggage and the helpers that carry it across threads, queues
// and fork() are in pivot/current_baggage.h.
//
// Naming instances. Offline, instance ids come from a process-wide counter; live, two
// processes would hand out the same ids, and joining their branches would drop tuples (or
// count them twice). Here every baggage belongs to a lineage -- a random 64-bit origin
// drawn when it started empty (lazily: when it first names, splits or serializes
// something), and a stamp whose id is disjoint from that of every other
// live branch of the lineage: Split forks it, Join joins it. An instance is named just
// before it can meet instances from another branch -- when Split freezes the active
// instance, and when Join takes in the other side's active instance -- by one Event() of
// the owning branch's stamp; its name is the origin followed by the encoded event tree
// right after that event. Within a lineage two distinct events have distinct causal pasts
// (one contains the other strictly, or neither contains the other), and the normal form
// is unique, so two instances never get the same name, whichever processes named them;
// lineages differ by origin (two of them draw the same 64 random bits with odds of 2^-64).
// An instance shared from before a split keeps its name on both sides, so the join
// dedupes it. The 64-bit id is a hash of the name for a quick compare; equality also
// compares the names. The active instance stays unnamed while it is only packed into, so
// a request that never branches never pays for an event.
//
// A baggage with no tuples serializes to nothing, as Pivot's does, whatever its stamp: a
// request that no query packs into costs its calls and replies no bytes, no fork and no
// join. The receiver of nothing starts a lineage of its own, and so does a branch split
// from a baggage with nothing in it. When a branch of another
// lineage is joined (a reply from such a receiver), its instances come in with their
// names and its stamp is left out: its id may overlap this lineage's.
//
// Serialize is for a hand-off: the receiver continues this branch, stamp included. To send
// a branch while the sender goes on (an RPC), Split first and serialize the branch;
// serializing one baggage to two receivers would give them the same id. A reply goes back
// to the sender, which holds the frozen instances the call carried: SerializeReplyTo
// leaves them out (the join would skip them), so a reply carries only what the callee
// added, and its stamp -- with no instance at all when the callee added nothing, so that
// the caller's clock still joins back.
//
// Lazy decoding. Deserialize only checks the version byte and the size and keeps the
// bytes; the first Contents(), Split, Join or Decode decodes. Serialize of a baggage that
// was never decoded returns the same bytes, so a process that only forwards baggage pays a
// copy. Decoding that fails leaves the baggage empty (a new seed), counts the rejection in
// BaggageCounters and keeps the error in decode_status().
//
// Strings. Values are views (query/value.h). Strings decoded from bytes point into the
// kept bytes, which every baggage split from this one shares. A string that advice packs
// through Contents() must outlive this baggage and every branch split from it: pack a copy
// made with Intern() when it does not (a tracepoint's local variable, say).
//
// Binary form, version 1 (integers are LEB128 varints, minimal; zigzag for signed;
// doubles are 8 bytes little-endian IEEE 754):
//   baggage   := 0x02 origin stamp_size stamp instances
//                (or nothing at all: no tuples, what a request carries when no query
//                packs anything)
//   origin    := 8 bytes, little-endian: the lineage's random origin
//   stamp     := the interval tree clock's encoding (itc.h), at most kMaxStampBytes
//   instances := count (<= kMaxInstances), then each instance:
//   instance  := 0x00 name_size name slots   a frozen instance (name 1..kMaxNameBytes)
//              | 0x01 slots                  the active instance: at most one, the last
//   slots     := count (<= kMaxSlots), then each slot: width (<= kMaxWidth), partials
//                (<= kMaxWidth), tuples (<= kMaxTuples), then each tuple: `width` values,
//                `partials` partial aggregates, mult, order (zigzag)
//   mult      := varint 2*m, for a whole multiplicity m below 2^52 (almost always 1)
//              | 0x01 double              any other
//                (a tuple of one 8-byte integer is 12 bytes: tag, 9-byte varint, 1, 1)
//   partial   := sum (double) weight (double) min (value) max (value)
//   value     := 0x00 (null) | 0x01 zigzag (int) | 0x02 double (float)
//              | 0x03 size bytes (string, size <= kMaxStringBytes)
// The whole is at most kMaxSerializedBytes. Serialize writes slots up to the last
// non-empty one and an empty slot as width 0, partials 0, tuples 0; it leaves out an active
// instance that holds no tuples. Decode accepts any input that follows the grammar, so the
// form it re-encodes to is stable: Serialize(Decode(Serialize(Decode(b)))) equals
// Serialize(Decode(b)).
//
// Thread safety: none; one baggage belongs to one thread at a time (hand it over with a
// move). BaggageCounters are atomic.
#pragma once

#include <absl/container/inlined_vector.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "pivot/itc.h"
#include "query/baggage.h"

namespace weft::pivot {

inline constexpr uint8_t kBaggageFormatVersion = 2;
inline constexpr size_t kMaxSerializedBytes = size_t{1} << 20;
inline constexpr size_t kMaxStampBytes = 4096;
inline constexpr size_t kMaxNameBytes = 4096;
inline constexpr uint32_t kMaxInstances = 4096;
inline constexpr uint32_t kMaxSlots = 1024;
inline constexpr uint32_t kMaxWidth = 256;
inline constexpr uint32_t kMaxTuples = 1 << 20;
inline constexpr size_t kMaxStringBytes = 1 << 16;

// Process-wide counts of baggage that was refused, for the agent to report.
struct BaggageCounters {
  std::atomic<uint64_t> deserialize_rejected{0};  // Deserialize refused the bytes outright
  std::atomic<uint64_t> decode_rejected{0};       // the lazy decode found them malformed
};
BaggageCounters& GlobalBaggageCounters();

class Baggage {
 public:
  Baggage() = default;  // empty, a new request: makes nothing until something is packed
  // A moved-from baggage is a fresh, empty one (a new request).
  Baggage(Baggage&&) noexcept = default;
  Baggage& operator=(Baggage&&) noexcept = default;
  ~Baggage() = default;
  // No copies: a copy would share this branch's clock id. Split() makes a branch.
  Baggage(const Baggage&) = delete;
  Baggage& operator=(const Baggage&) = delete;
  friend void swap(Baggage& a, Baggage& b) noexcept { a.state_.swap(b.state_); }

  // Empties the baggage and starts a new request (a new lineage, drawn when needed).
  void Clear() { state_.reset(); }

  // The tuples, for advice to pack and unpack. Decodes on first use. The reference stays
  // valid until this baggage is moved from, assigned, cleared or destroyed.
  query::Baggage& Contents() {
    State& s = Made();
    if (!s.decoded) DecodeNow();
    return s.contents;
  }
  // The number of tuples over every instance (decodes).
  size_t tuples() { return state_ ? Contents().tuples() : 0; }

  // Table 4's split(): this baggage keeps one side; the result is the other branch.
  Baggage Split();
  // Table 4's join(): merges in `branch`, a branch that was split from this request's
  // baggage and ends here. `branch` is left empty.
  void Join(Baggage&& branch);

  // Table 4's serialize(): appends the binary form (above) to `out`.
  void SerializeTo(std::string& out) const;
  // The same for a reply to whoever sent this baggage (its caller): leaves out the frozen
  // instances it arrived with, which the caller holds (its Join would skip them), and
  // carries the rest and the stamp back. A baggage that arrived with instances and gained
  // nothing carries its origin and stamp alone, so that the caller's clock joins back.
  void SerializeReplyTo(std::string& out) const;
  // Split().SerializeTo(out) (a call's baggage: the branch goes, this side stays), without
  // making the branch.
  void SplitSerializeTo(std::string& out);
  std::string Serialize() const;
  std::string SerializeReply() const;  // SerializeReplyTo into a new string
  // Table 4's deserialize(): replaces this baggage with the one in `bytes`, decoded later.
  // Refuses bytes with another version or over kMaxSerializedBytes (then this baggage is
  // empty, and the refusal counted).
  Status Deserialize(std::string_view bytes);
  // The same, keeping `bytes` itself rather than a copy (a message's baggage field the
  // receiver has no further use for).
  Status DeserializeOwned(std::string&& bytes);
  // Decodes now; the status of the decode (ok if there was nothing to decode).
  Status Decode();
  const Status& decode_status() const;
  // Advice's packs into this baggage so far (query::Baggage::packs): unchanged across a
  // tracepoint's firing, its advice packed nothing here, and the baggage serializes as
  // before (or it failed to decode: see decode_status()).
  uint64_t packs() const { return state_ ? state_->contents.packs() : 0; }
  bool decoded() const { return !state_ || state_->decoded; }

  // A copy of `s` that lives as long as this baggage and its branches.
  std::string_view Intern(std::string_view s);

  const itc::Stamp& stamp() {
    State& s = Made();
    if (!s.decoded) DecodeNow();
    Seed();
    return *s.stamp;
  }

 private:
  using Storage = absl::InlinedVector<std::shared_ptr<const std::string>, 2>;
  // Everything a baggage holds. A fresh baggage (a new request, one moved from) has none:
  // where no query packs, instrumentation moves, swaps and destroys baggage several times a
  // request, and then each costs what a pointer's does.
  struct State {
    // The lineage (above) and this branch's stamp; 0 and none until something needs them
    // (a pack names, splits or serializes): a request no query packs into never draws an
    // origin or makes a stamp. Drawn on first use, also by a const Serialize.
    uint64_t origin = 0;
    std::optional<itc::Stamp> stamp;
    query::Baggage contents;
    // Decoded or not: when not, `bytes` holds the serialized form and `contents` is empty.
    bool decoded = true;
    std::shared_ptr<const std::string> bytes;
    Status decode_status;
    // How many of the frozen instances (the first ones) were decoded from the bytes this
    // baggage was given: what a reply leaves out (SerializeReplyTo).
    uint32_t arrived = 0;
    // What string values point into: decoded bytes and interned strings, shared by
    // branches. A request's baggage mostly points into one or two blocks (what it arrived
    // as, and a reply): inline, so that neither it nor a branch's copy allocates.
    Storage storage;

    // No tuples, in no instance: serialized as nothing, split and joined as nothing.
    // Frozen instances first: counting tuples walks every instance's slots.
    bool HoldsNothing() const { return contents.frozen().empty() && contents.tuples() == 0; }
    // As new (packs() from 0 again), keeping what its containers had allocated.
    void Reset();
  };
  // A baggage's state comes from, and goes back to, a few kept by each thread (baggage.cc):
  // with a query a hop makes and ends several (its request's, a reply's), and allocating
  // each cost more than the moves saved.
  static State* NewState();
  struct EndState {
    void operator()(State* state) const;
  };
  State& Made() {
    if (!state_) state_.reset(NewState());
    return *state_;
  }

  // Checks Deserialize's bytes (counting a refusal) after emptying this baggage; true when
  // there are bytes to keep.
  Result<bool> Accept(std::string_view bytes);
  // `known`: frozen instances to leave out (a branch decoded only to be joined into it).
  // Leaves state_ where it is, reset in place when the bytes fail to decode.
  void DecodeNow(const query::Baggage* known = nullptr);
  Status DecodeBytes(const query::Baggage* known);
  // Draws the lineage's origin and seeds its stamp, if not yet done; state_ is made.
  void Seed() const;
  // Names the active instance with an event of this branch's stamp, if it holds tuples.
  void NameActive();
  void Share(const Storage& storage);
  // A baggage that holds something (the callers check), with this origin and stamp.
  // `skip`: leaves out the first `skip` frozen instances.
  static void SerializeDecoded(std::string& out, uint64_t origin, const itc::Stamp& stamp,
                               const query::Baggage& contents, size_t skip = 0);

  std::unique_ptr<State, EndState> state_;
};

}  // namespace weft::pivot
