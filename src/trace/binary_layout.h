// The .weft binary trace's layout, shared by its writer (binary_format.cc) and its reader
// (binary_decoder.cc); docs/formats.md ("Binary message trace") is the byte-by-byte
// description and must change with these files.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "trace/trace.h"

namespace weft::binary_layout {

static_assert(std::endian::native == std::endian::little,
              "the .weft format is little-endian and is read by memcpy");

inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kHeaderSize = 64;
inline constexpr size_t kHeaderChecksumOffset = 56;
inline constexpr size_t kSectionEntrySize = 32;
inline constexpr size_t kAlignment = 8;
// Section flag bit 0: a reader that does not know the section's kind must refuse the file
// (for a future section that changes the meaning of the others). Known kinds ignore flags.
inline constexpr uint32_t kFlagRequired = 1;

enum class SectionKind : uint32_t {
  kNodeNames = 1,
  kStrings = 2,
  kSendTime = 3,
  kRecvTime = 4,
  kSender = 5,
  kReceiver = 6,
  kKind = 7,
  kCallId = 8,
  kBytes = 9,
  kSenderThread = 10,
  kReceiverThread = 11,
  kSenderEndpoint = 12,
  kReceiverEndpoint = 13,
  kTruthPath = 14,
  kTruthParent = 15,
  kAttributes = 16,
  kProcessLinks = 17,   // optional: written only when the trace has links
  kConnectTime = 18,    // optional: written only when some message has a connect time
  kLinkMessages = 19,   // optional: written only when some link names its messages
  kFirstReadTime = 20,  // optional: written only when some message has a first read time
  kAcceptTime = 21,     // optional: written only when some message has an accept time
};
inline constexpr uint32_t kFirstKind = 1;
inline constexpr uint32_t kLastRequiredKind = 16;
inline constexpr uint32_t kLastKind = 21;
// A process link on disk: i64 time, u32 from node, u32 from thread, u32 to node, u32 to
// thread, u8 kind, u8 flags (1: ambiguous), u48 delay (HANDOFF: nanoseconds from `time` to
// the take-over, 0 for the other kinds; 2^48 ns is 78 hours). Files from before hand-offs
// have zeros there.
inline constexpr size_t kProcessLinkSize = 32;
// Per process link, in the same order: u32 from_message, u32 to_message (0xffffffff: none).
inline constexpr size_t kLinkMessagesSize = 8;
inline constexpr size_t kKnownSectionCount = kLastKind - kFirstKind + 1;

inline constexpr std::array<std::string_view, kKnownSectionCount> kSectionNames = {
    "node_names",
    "strings",
    "send_time",
    "recv_time",
    "sender",
    "receiver",
    "kind",
    "call_id",
    "bytes",
    "sender_thread",
    "receiver_thread",
    "sender_endpoint",
    "receiver_endpoint",
    "truth_path",
    "truth_parent",
    "attributes",
    "process_links",
    "connect_time",
    "link_messages",
    "first_read_time",
    "accept_time"};

inline std::string_view SectionName(SectionKind kind) {
  return kSectionNames[uint32_t(kind) - kFirstKind];
}

// Every column element must be a plain value whose bytes are what the file holds.
template <typename T>
inline constexpr bool kPlainColumn = std::is_trivially_copyable_v<T> && sizeof(T) <= 8;
static_assert(kPlainColumn<NodeId> && sizeof(NodeId) == 4);
static_assert(kPlainColumn<MessageKind> && sizeof(MessageKind) == 1);
static_assert(sizeof(Attribute) == 12 && std::is_trivially_copyable_v<Attribute>);

inline size_t AlignUp(size_t n) { return (n + kAlignment - 1) & ~(kAlignment - 1); }

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void Store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace weft::binary_layout
