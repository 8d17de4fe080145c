// fragment's departure from BorderPatrol §5.5 for programs that do not act on a request in
// the turn that read it (fragment.h): the requests a node set aside, the calls that
// forward them, found by their content, and after the scan the order of the replies,
// which gives each such forward its request where one thread sends all of a node's
// messages. BorderPatrol matches content only across untraced modules (witness.h).
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/id.h"
#include "infer/fragment/witness.h"
#include "trace/trace.h"

namespace weft {

class SetAsideRequests {
 public:
  // A request's content, as a proxy forwards it: what ForwardedFields reads but the
  // identifiers a proxy may add where the client sent none (witness.h weighs those apart),
  // and the DNS id, which a forwarder replaces with one of its own (dnsmasq, unbound).
  // Invalid throughout where the message carries none.
  using Content = ForwardedFields::Values;

  // `call_of` is CallsAnswered's; `answered` and `acted_on` (per request: its reply sent;
  // an output placed in it) are the scan's, read as it goes.
  SetAsideRequests(const Trace& trace, std::span<const MessageId> call_of,
                   const std::vector<bool>& answered, const std::vector<bool>& acted_on);

  Content ContentOf(MessageId m) const;
  static bool Known(const Content& content);

  // `request`, read at `node`, waits for a forward; `shared`: set aside by a later request
  // of the same read.
  void Add(uint32_t node, MessageId request, bool shared);
  // Whether requests set aside at `node` wait still.
  bool AnyWaiting(uint32_t node) const;
  // The request `call`, sent at `node`, forwards, where `placed` is where the scan would
  // put it; `*followed` is set where it is a request set aside. `one_sender`: one thread
  // sends all of the node's messages.
  MessageId Follow(uint32_t node, MessageId call, MessageId placed, bool one_sender,
                   bool* followed);
  // After the scan: gives the forwards Follow found their requests by the order of the
  // replies, in `parent`; returns the forwards it gave.
  absl::flat_hash_set<uint32_t> ReorderByReplies(std::vector<MessageId>& parent);

  // Whether a forward was followed at `node`, where one thread sends everything.
  bool followed_at_one_sender(uint32_t node) const { return following_nodes_.contains(node); }
  int64_t found() const { return set_aside_found_; }
  int64_t shared_read_found() const { return shared_read_found_; }
  int64_t guessed() const { return set_aside_guessed_; }
  int64_t reordered() const { return set_aside_reordered_; }

 private:
  using Thread = std::pair<uint32_t, ThreadId>;  // (node, thread)
  struct Waiting {
    MessageId request;
    bool shared;  // set aside by a later request of the same read
    Content content;
  };
  // A bound keeps a node that never forwards what it set aside from growing its list.
  static constexpr size_t kMaxSetAside = 256;

  // A request set aside waits no more once an output was placed in it or it was answered.
  bool Done(MessageId request) const {
    return answered_[request.value()] || acted_on_[request.value()];
  }

  const Trace& trace_;
  const TraceColumns& c_;
  std::span<const MessageId> call_of_;
  const std::vector<bool>& answered_;
  const std::vector<bool>& acted_on_;
  ForwardedFields fields_;
  // Per node: the requests set aside, oldest first.
  absl::flat_hash_map<uint32_t, std::vector<Waiting>> set_aside_;
  // Per call: when its reply was sent, and when the reply to it was read (kNoTime: never).
  std::vector<TimeNs> answer_sent_, return_read_;
  // Nodes where a forward was followed to a request by content: one-sender nodes, and
  // the same where several threads send.
  absl::flat_hash_set<uint32_t> following_nodes_, following_threads_;
  int64_t set_aside_found_ = 0, shared_read_found_ = 0, set_aside_guessed_ = 0,
          set_aside_reordered_ = 0;
};

}  // namespace weft
