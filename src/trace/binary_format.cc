// The .weft binary trace's writer (binary_layout.h has the layout). Columns are copied
// straight from the trace, behind a header and a table of sections, each checksummed.
#include "trace/binary_format.h"

#include <xxhash.h>

#include <span>
#include <string>
#include <vector>

#include "core/file.h"
#include "trace/binary_layout.h"

namespace weft {
namespace {

using namespace binary_layout;  // the layout's names are this file's vocabulary

// A section as the encoder lays it out: where its bytes come from and how many.
struct SectionSource {
  SectionKind kind;
  std::string owned;           // name tables are serialised first, then copied
  const void* data = nullptr;  // columns are copied straight from the trace
  size_t size = 0;
};

// u32 count, u32 zero, u64 offsets[count + 1] (into the bytes that follow), bytes.
template <typename IdType>
std::string EncodeStringTable(const InternTable<IdType>& table) {
  const size_t count = table.size();
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += table.Get(IdType(uint32_t(i))).size();
  std::string out(8 + 8 * (count + 1) + total, '\0');
  uint8_t* base = reinterpret_cast<uint8_t*>(out.data());
  Store<uint32_t>(base, uint32_t(count));
  uint8_t* offsets = base + 8;
  uint8_t* bytes = offsets + 8 * (count + 1);
  uint64_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    Store<uint64_t>(offsets + 8 * i, offset);
    std::string_view s = table.Get(IdType(uint32_t(i)));
    if (!s.empty()) std::memcpy(bytes + offset, s.data(), s.size());
    offset += s.size();
  }
  Store<uint64_t>(offsets + 8 * count, offset);
  return out;
}

std::string EncodeProcessLinks(std::span<const ProcessLink> links) {
  std::string out(links.size() * kProcessLinkSize, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(out.data());
  for (const ProcessLink& l : links) {
    Store<int64_t>(p, l.time);
    Store<uint32_t>(p + 8, l.from.value());
    Store<uint32_t>(p + 12, l.from_thread.value());
    Store<uint32_t>(p + 16, l.to.value());
    Store<uint32_t>(p + 20, l.to_thread.value());
    p[24] = uint8_t(l.kind);
    p[25] = l.ambiguous ? 1 : 0;
    uint64_t delay = l.kind == ProcessLinkKind::kHandoff ? uint64_t(l.TakenAt() - l.time) : 0;
    for (int b = 0; b < 6; ++b) p[26 + b] = uint8_t(delay >> (8 * b));
    p += kProcessLinkSize;
  }
  return out;
}

std::string EncodeLinkMessages(std::span<const ProcessLink> links) {
  std::string out(links.size() * kLinkMessagesSize, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(out.data());
  for (const ProcessLink& l : links) {
    Store<uint32_t>(p, l.from_message.value());
    Store<uint32_t>(p + 4, l.to_message.value());
    p += kLinkMessagesSize;
  }
  return out;
}

template <typename T>
SectionSource Column(SectionKind kind, const std::vector<T>& column) {
  return SectionSource{kind, {}, column.data(), column.size() * sizeof(T)};
}

}  // namespace

std::string EncodeBinaryTrace(const Trace& trace) {
  const TraceColumns& c = trace.columns();
  std::vector<SectionSource> sections;
  sections.reserve(kKnownSectionCount);
  sections.push_back({SectionKind::kNodeNames, EncodeStringTable(trace.nodes())});
  sections.push_back({SectionKind::kStrings, EncodeStringTable(trace.strings())});
  sections.push_back(Column(SectionKind::kSendTime, c.send_time));
  sections.push_back(Column(SectionKind::kRecvTime, c.recv_time));
  sections.push_back(Column(SectionKind::kSender, c.sender));
  sections.push_back(Column(SectionKind::kReceiver, c.receiver));
  sections.push_back(Column(SectionKind::kKind, c.kind));
  sections.push_back(Column(SectionKind::kCallId, c.call_id));
  sections.push_back(Column(SectionKind::kBytes, c.bytes));
  sections.push_back(Column(SectionKind::kSenderThread, c.sender_thread));
  sections.push_back(Column(SectionKind::kReceiverThread, c.receiver_thread));
  sections.push_back(Column(SectionKind::kSenderEndpoint, c.sender_endpoint));
  sections.push_back(Column(SectionKind::kReceiverEndpoint, c.receiver_endpoint));
  sections.push_back(Column(SectionKind::kTruthPath, c.truth_path));
  sections.push_back(Column(SectionKind::kTruthParent, c.truth_parent));
  std::span<const Attribute> attributes = trace.attributes();
  sections.push_back(
      {SectionKind::kAttributes, {}, attributes.data(), attributes.size() * sizeof(Attribute)});
  // Only traces with links carry the section, so a trace without them is written exactly
  // as before links existed (and older readers skip the section: it is not required).
  if (!trace.process_links().empty()) {
    sections.push_back({SectionKind::kProcessLinks, EncodeProcessLinks(trace.process_links())});
  }
  // Likewise connect, first read and accept times: a trace without any is written as
  // before they were columns.
  for (auto [kind, times] : {std::pair{SectionKind::kConnectTime, &c.connect_time},
                             {SectionKind::kFirstReadTime, &c.first_read_time},
                             {SectionKind::kAcceptTime, &c.accept_time}}) {
    if (std::any_of(times->begin(), times->end(), [](TimeNs t) { return t != kNoTime; })) {
      sections.push_back(Column(kind, *times));
    }
  }
  // Likewise the messages links name.
  if (std::any_of(
          trace.process_links().begin(), trace.process_links().end(),
          [](const ProcessLink& l) { return l.from_message.valid() || l.to_message.valid(); })) {
    sections.push_back({SectionKind::kLinkMessages, EncodeLinkMessages(trace.process_links())});
  }
  for (SectionSource& s : sections) {
    if (!s.data) {
      s.data = s.owned.data();
      s.size = s.owned.size();
    }
  }

  const size_t table_end = kHeaderSize + sections.size() * kSectionEntrySize;
  size_t file_size = table_end;
  for (const SectionSource& s : sections) file_size = AlignUp(file_size) + s.size;
  file_size = AlignUp(file_size);

  std::string out(file_size, '\0');
  uint8_t* base = reinterpret_cast<uint8_t*>(out.data());
  size_t offset = table_end;
  for (size_t i = 0; i < sections.size(); ++i) {
    const SectionSource& s = sections[i];
    offset = AlignUp(offset);
    if (s.size) std::memcpy(base + offset, s.data, s.size);
    uint8_t* entry = base + kHeaderSize + i * kSectionEntrySize;
    Store<uint32_t>(entry, uint32_t(s.kind));
    Store<uint32_t>(entry + 4, 0);
    Store<uint64_t>(entry + 8, offset);
    Store<uint64_t>(entry + 16, s.size);
    Store<uint64_t>(entry + 24, XXH3_64bits(base + offset, s.size));
    offset += s.size;
  }

  std::memcpy(base, kBinaryTraceMagic.data(), kBinaryTraceMagic.size());
  Store<uint32_t>(base + 8, kVersion);
  Store<uint32_t>(base + 12, uint32_t(kHeaderSize));
  Store<uint64_t>(base + 16, trace.size());
  Store<uint64_t>(base + 24, attributes.size());
  Store<uint32_t>(base + 32, uint32_t(sections.size()));
  Store<uint64_t>(base + 40, file_size);
  // The header checksum covers the header (without itself) and the section table.
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, base, kHeaderChecksumOffset);
  XXH3_64bits_update(state, base + kHeaderSize, table_end - kHeaderSize);
  Store<uint64_t>(base + kHeaderChecksumOffset, XXH3_64bits_digest(state));
  XXH3_freeState(state);
  return out;
}

Status WriteBinaryTrace(const Trace& trace, const std::string& path) {
  return WriteFile(path, EncodeBinaryTrace(trace));
}

}  // namespace weft
