// Interval tree clocks (Almeida, Baquero and Fonte, "Interval Tree Clocks: A Logical Clock
// for Dynamic Systems", OPODIS 2008): a causality clock for a population of participants
// that come and go without any coordination. Pivot Tracing (§5 "Branches and Versioning")
// names the versioned instances of a request's baggage with them: a branching execution
// forks the clock, a rejoining one joins it, and every new instance is an event, so two
// branches, in two processes or two threads, name their instances without ever talking.
//
// A Stamp is a pair (id, event):
//   - the id tree says which part of the unit interval [0, 1) this participant owns. A
//     leaf is 0 (owns nothing) or 1 (owns all of its subinterval); a node splits its
//     interval into halves. The ids of stamps alive at the same time never overlap:
//     Seed() owns everything, Fork() halves what a stamp owns, Join() adds two parts back.
//   - the event tree is a function from [0, 1) to counts, the causal past the stamp has
//     seen. A leaf is a count n; a node (n, l, r) adds n to both halves.
// Event() inflates the event tree inside the stamp's own id only (the paper's fill, or if
// fill cannot simplify the tree, grow), so a stamp's events never look like another's.
// Leq(a, b) is the causal order: a's past is contained in b's.
//
// Trees are kept in the paper's normal form (an id node never has two equal leaves; an
// event node's children have minimum 0 and are not two equal leaves), which is unique for
// the function a tree denotes, so two stamps are equal exactly when their encodings are.
// Nodes are immutable and shared between stamps, so copying a stamp costs a reference
// count; every operation builds new nodes where it changes something.
//
// Encoding (Encode/Decode): the id tree in preorder, one byte per node (0: leaf 0, 1: leaf
// 1, 2: a node followed by its two children), then the event tree in preorder, per node
// one LEB128 varint of 2*n + (1 if a node follows with its two children, else 0). Decode
// accepts exactly what Encode writes: normal form, minimal varints, depth at most
// kMaxDepth, counts that fit in 62 bits along every path, no bytes left over.
//
// Departure from the paper: its bit-level encoding saves a few bits per node; bytes are
// simpler to check and the stamps a request carries are tens of bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace weft::pivot::itc {

struct IdNode;
struct EventNode;
using IdTree = std::shared_ptr<const IdNode>;
using EventTree = std::shared_ptr<const EventNode>;

// The deepest tree Decode accepts; Fork deepens the id by one level, so a request would
// need more than 48 nested branches without a join to come near it.
inline constexpr int kMaxDepth = 48;

class Stamp {
 public:
  // The seed stamp: owns the whole interval, has seen nothing.
  static Stamp Seed();
  // An anonymous stamp (id 0) that has seen what `s` has: the paper's peek. It can compare
  // and join but not fork usefully or record events.
  static Stamp Peek(const Stamp& s);

  Stamp();  // the same as Seed()

  // Exchanges two stamps' trees (four pointers; std::swap's three moves would make a
  // temporary).
  friend void swap(Stamp& a, Stamp& b) noexcept {
    a.id_.swap(b.id_);
    a.event_.swap(b.event_);
  }

  // Splits this stamp's id in two disjoint halves: this stamp keeps one, the result gets
  // the other; both keep the event tree.
  Stamp Fork();
  // Adds `other`'s id and past to this stamp. `other` must not be used afterwards to fork
  // or record events (its id now belongs to this stamp).
  void Join(const Stamp& other);
  // Records a new event: inflates the event tree inside this stamp's id. Returns false and
  // changes nothing when the id is 0 (an anonymous stamp owns nowhere to record it).
  bool Event();

  // This stamp's past is contained in `other`'s (equal stamps included).
  bool Leq(const Stamp& other) const;
  bool operator==(const Stamp& other) const;

  bool anonymous() const;  // id 0
  // The ids of two stamps overlap: for checking that live stamps never do.
  static bool IdsOverlap(const Stamp& a, const Stamp& b);

  // Appends the encoding (above) to `out`.
  void Encode(std::string& out) const;
  std::string Encode() const;
  // Appends only the event tree's encoding: a canonical name for the stamp's causal past.
  void EncodeEvent(std::string& out) const;
  // Decodes exactly one stamp from all of `bytes`.
  static Result<Stamp> Decode(std::string_view bytes);

  // The paper's notation, e.g. "((1,0), (0,1,0))", for tests and debugging.
  std::string ToString() const;

 private:
  Stamp(IdTree id, EventTree event) : id_(std::move(id)), event_(std::move(event)) {}

  IdTree id_;
  EventTree event_;
};

}  // namespace weft::pivot::itc
