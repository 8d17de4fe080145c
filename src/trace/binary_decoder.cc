// The .weft binary trace's reader (binary_layout.h has the layout).
//
// Decoding trusts nothing in the file: every count, offset and size is checked against the
// file's real size before it is used, in an order chosen so that the first failed check
// names the real problem (a truncated file says "truncated", not "bad checksum"). Columns
// are memcpy'd straight out of the map, so loading is linear and close to memory speed.
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <system_error>
#include <thread>

#include "core/file.h"
#include "trace/binary_format.h"
#include "trace/binary_layout.h"
#include "trace/legacy_attributes.h"

namespace weft {
namespace {

using namespace binary_layout;  // the layout's names are this file's vocabulary

// Files written before connect times were a column carry them as attributes
// "net.connected=<decimal ns>": they become the column, and the attributes go.
void MoveLegacyConnectTimes(const StringTable& strings, std::vector<TimeNs>& connect_time,
                            std::vector<Attribute>& attributes) {
  const StringId key = strings.Find(kLegacyConnectedAttribute);
  if (!key.valid()) return;
  auto moved = [&](const Attribute& a) {
    if (a.key != key || a.message.value() >= connect_time.size() || !strings.Contains(a.value))
      return false;
    std::string_view text = strings.Get(a.value);
    TimeNs t = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), t);
    if (error != std::errc() || end != text.data() + text.size()) return false;
    connect_time[a.message.value()] = t;
    return true;
  };
  attributes.erase(std::remove_if(attributes.begin(), attributes.end(), moved), attributes.end());
}

struct SectionView {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint64_t offset = 0;
  bool present = false;
};

class Decoder {
 public:
  Decoder(std::span<const uint8_t> data, std::string_view source) : data_(data), source_(source) {}

  Result<Trace> Decode() {
    WEFT_RETURN_IF_ERROR(CheckHeader());
    WEFT_RETURN_IF_ERROR(ReadSectionTable());
    NodeTable nodes;
    StringTable strings;
    WEFT_RETURN_IF_ERROR(DecodeStringTable(SectionKind::kNodeNames, nodes));
    WEFT_RETURN_IF_ERROR(DecodeStringTable(SectionKind::kStrings, strings));
    TraceColumns c;
    {
      // Most of a large trace's load is the kernel faulting in the columns' new pages,
      // which it does for two threads at once: a second thread copies half the bytes.
      auto copy_some = [&] {
        CopyColumn(SectionKind::kSendTime, c.send_time);
        CopyColumn(SectionKind::kRecvTime, c.recv_time);
        CopyColumn(SectionKind::kBytes, c.bytes);
        CopyColumn(SectionKind::kSenderThread, c.sender_thread);
      };
      std::optional<std::jthread> helper;
      try {
        if (message_count_ >= kParallelCopyMessages) helper.emplace(copy_some);
      } catch (const std::system_error&) {  // no thread to be had: all on this one
      }
      if (!helper) copy_some();
      CopyColumn(SectionKind::kSender, c.sender);
      CopyColumn(SectionKind::kReceiver, c.receiver);
      CopyColumn(SectionKind::kKind, c.kind);
      CopyColumn(SectionKind::kCallId, c.call_id);
      CopyColumn(SectionKind::kReceiverThread, c.receiver_thread);
      CopyColumn(SectionKind::kSenderEndpoint, c.sender_endpoint);
      CopyColumn(SectionKind::kReceiverEndpoint, c.receiver_endpoint);
      CopyColumn(SectionKind::kTruthPath, c.truth_path);
      CopyColumn(SectionKind::kTruthParent, c.truth_parent);
    }
    std::vector<Attribute> attributes;
    CopyColumn(SectionKind::kAttributes, attributes);
    if (sections_[uint32_t(SectionKind::kConnectTime) - kFirstKind].present) {
      CopyColumn(SectionKind::kConnectTime, c.connect_time);
    } else {
      c.connect_time.assign(message_count_, kNoTime);
      MoveLegacyConnectTimes(strings, c.connect_time, attributes);
    }
    for (auto [kind, times] : {std::pair{SectionKind::kFirstReadTime, &c.first_read_time},
                               {SectionKind::kAcceptTime, &c.accept_time}}) {
      if (sections_[uint32_t(kind) - kFirstKind].present) {
        CopyColumn(kind, *times);
      } else {
        times->assign(message_count_, kNoTime);
      }
    }
    const SectionView& linked = sections_[uint32_t(SectionKind::kLinkMessages) - kFirstKind];
    const uint64_t link_count =
        sections_[uint32_t(SectionKind::kProcessLinks) - kFirstKind].size / kProcessLinkSize;
    if (linked.present && linked.size != link_count * kLinkMessagesSize) {
      return Corrupt("section 'link_messages' at byte {} has {} bytes, want {} ({} links x {})",
                     linked.offset, linked.size, link_count * kLinkMessagesSize, link_count,
                     kLinkMessagesSize);
    }
    std::vector<ProcessLink> links = DecodeProcessLinks();
    // Ids in range, time order, parents, attribute and link order are the trace's own rules.
    auto trace = Trace::FromParts(std::move(nodes), std::move(strings), std::move(c),
                                  std::move(attributes), std::move(links));
    if (!trace.ok()) return trace.status().WithContext(source_);
    return trace;
  }

 private:
  template <typename... Args>
  Status Corrupt(fmt::format_string<Args...> f, Args&&... args) const {
    return Status::Corruption("{}: {}", source_, fmt::format(f, std::forward<Args>(args)...));
  }

  Status CheckHeader() {
    const size_t size = data_.size();
    const uint8_t* p = data_.data();
    const size_t magic_bytes = std::min(size, kBinaryTraceMagic.size());
    if (size == 0) return Corrupt("truncated: empty file, not a weft binary trace");
    if (std::memcmp(p, kBinaryTraceMagic.data(), magic_bytes) != 0) {
      return Corrupt("not a weft binary trace (bad magic at byte 0)");
    }
    if (size < 12) {
      return Corrupt("truncated: {} bytes, shorter than the {}-byte header", size, kHeaderSize);
    }
    uint32_t version = Load<uint32_t>(p + 8);
    if (version != kVersion) {
      return Status(StatusCode::kUnimplemented,
                    fmt::format("{}: unsupported version {} at byte 8 (this weft reads version {})",
                                source_, version, kVersion));
    }
    if (size < kHeaderSize) {
      return Corrupt("truncated: {} bytes, shorter than the {}-byte header", size, kHeaderSize);
    }
    uint64_t recorded_size = Load<uint64_t>(p + 40);
    if (recorded_size > size) {
      return Corrupt("truncated: the header at byte 40 records {} bytes, the file has {}",
                     recorded_size, size);
    }
    if (recorded_size < size) {
      return Corrupt("the header at byte 40 records {} bytes, the file has {} (trailing data)",
                     recorded_size, size);
    }
    header_size_ = Load<uint32_t>(p + 12);
    if (header_size_ < kHeaderSize || header_size_ % kAlignment != 0 || header_size_ > size) {
      return Corrupt("bad header size {} at byte 12 (want a multiple of 8, at least {})",
                     header_size_, kHeaderSize);
    }
    section_count_ = Load<uint32_t>(p + 32);
    table_end_ = header_size_ + uint64_t(section_count_) * kSectionEntrySize;  // < 2^38
    if (table_end_ > size) {
      return Corrupt(
          "bad section count {} at byte 32: the section table would end at byte {}, "
          "past the end of the file ({} bytes)",
          section_count_, table_end_, size);
    }
    XXH3_state_t* state = XXH3_createState();
    XXH3_64bits_reset(state);
    XXH3_64bits_update(state, p, kHeaderChecksumOffset);
    XXH3_64bits_update(state, p + kHeaderSize, table_end_ - kHeaderSize);
    uint64_t actual = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    uint64_t recorded = Load<uint64_t>(p + kHeaderChecksumOffset);
    if (actual != recorded) {
      return Corrupt(
          "header checksum mismatch (bytes 0-{} and the section table; recorded "
          "{:016x}, computed {:016x})",
          kHeaderSize - 1, recorded, actual);
    }
    message_count_ = Load<uint64_t>(p + 16);
    attribute_count_ = Load<uint64_t>(p + 24);
    // Each message takes at least one byte per column, each attribute 12: anything larger
    // cannot be right, and bounding them here keeps every later product from overflowing.
    if (message_count_ >= MessageId::kInvalidValue || message_count_ > size) {
      return Corrupt("bad message count {} at byte 16", message_count_);
    }
    if (attribute_count_ > size / sizeof(Attribute)) {
      return Corrupt("bad attribute count {} at byte 24", attribute_count_);
    }
    return Status::Ok();
  }

  // Element width of a known section with fixed-size elements, and how many it must hold.
  bool FixedShape(SectionKind kind, size_t& width, uint64_t& count) const {
    count = message_count_;
    switch (kind) {
      case SectionKind::kNodeNames:
      case SectionKind::kStrings:
      case SectionKind::kProcessLinks:
      case SectionKind::kLinkMessages:
        return false;
      case SectionKind::kSendTime:
      case SectionKind::kRecvTime:
      case SectionKind::kBytes:
      case SectionKind::kConnectTime:
      case SectionKind::kFirstReadTime:
      case SectionKind::kAcceptTime:
        width = 8;
        return true;
      case SectionKind::kKind:
        width = 1;
        return true;
      case SectionKind::kAttributes:
        width = sizeof(Attribute);
        count = attribute_count_;
        return true;
      default:
        width = 4;
        return true;
    }
  }

  Status ReadSectionTable() {
    const size_t size = data_.size();
    for (uint32_t i = 0; i < section_count_; ++i) {
      const uint64_t entry_at = header_size_ + uint64_t(i) * kSectionEntrySize;
      const uint8_t* entry = data_.data() + entry_at;
      const uint32_t raw_kind = Load<uint32_t>(entry);
      const uint32_t flags = Load<uint32_t>(entry + 4);
      const uint64_t offset = Load<uint64_t>(entry + 8);
      const uint64_t length = Load<uint64_t>(entry + 16);
      const uint64_t checksum = Load<uint64_t>(entry + 24);
      const bool known = raw_kind >= kFirstKind && raw_kind <= kLastKind;
      std::string name =
          known ? std::string(SectionName(SectionKind(raw_kind))) : fmt::format("#{}", raw_kind);
      if (offset < table_end_ || offset > size) {
        return Corrupt(
            "section '{}' (table entry {} at byte {}) starts at byte {}, outside "
            "{}..{}",
            name, i, entry_at, offset, table_end_, size);
      }
      if (length > size - offset) {  // offset <= size, so this cannot overflow
        return Corrupt(
            "truncated: section '{}' ends at byte {} past the end of the file ({} "
            "bytes)",
            name, offset + length, size);
      }
      if (offset % kAlignment != 0) {
        return Corrupt("section '{}' starts at byte {}, not a multiple of 8", name, offset);
      }
      if (!known) {
        // Forward compatibility: a newer writer's extra section is skipped, unless it says
        // that the file cannot be understood without it.
        if (flags & kFlagRequired) {
          return Corrupt("section kind {} at byte {} is required but unknown to this weft",
                         raw_kind, entry_at);
        }
        continue;
      }
      SectionKind kind = SectionKind(raw_kind);
      SectionView& view = sections_[raw_kind - kFirstKind];
      if (view.present) {
        return Corrupt("section '{}' appears twice (second at table entry {}, byte {})", name, i,
                       entry_at);
      }
      size_t width = 0;
      uint64_t count = 0;
      if (FixedShape(kind, width, count) && length != count * width) {
        return Corrupt("section '{}' at byte {} has {} bytes, want {} ({} x {} bytes)", name,
                       offset, length, count * width, count, width);
      }
      if (kind == SectionKind::kProcessLinks && length % kProcessLinkSize != 0) {
        return Corrupt("section '{}' at byte {} has {} bytes, not a multiple of {}", name, offset,
                       length, kProcessLinkSize);
      }
      const uint8_t* bytes = data_.data() + offset;
      uint64_t actual = XXH3_64bits(bytes, length);
      if (actual != checksum) {
        return Corrupt(
            "section '{}' (bytes {}..{}) checksum mismatch: recorded {:016x}, "
            "computed {:016x}",
            name, offset, offset + length, checksum, actual);
      }
      view = SectionView{bytes, length, offset, true};
    }
    for (uint32_t k = kFirstKind; k <= kLastRequiredKind; ++k) {
      if (!sections_[k - kFirstKind].present) {
        return Corrupt("required section '{}' is missing", SectionName(SectionKind(k)));
      }
    }
    return Status::Ok();
  }

  template <typename IdType>
  Status DecodeStringTable(SectionKind kind, InternTable<IdType>& table) {
    const SectionView& s = sections_[uint32_t(kind) - kFirstKind];
    std::string_view name = SectionName(kind);
    if (s.size < 16) {
      return Corrupt("section '{}' at byte {} has {} bytes, too small for a string table", name,
                     s.offset, s.size);
    }
    const uint64_t count = Load<uint32_t>(s.data);
    const uint64_t bytes_at = 8 + 8 * (count + 1);  // count < 2^32: no overflow
    if (bytes_at > s.size) {
      return Corrupt(
          "section '{}' at byte {}: {} strings need {} bytes of offsets, the section "
          "has {}",
          name, s.offset, count, bytes_at, s.size);
    }
    if (count >= IdType::kInvalidValue) {
      return Corrupt("section '{}' at byte {}: too many strings ({})", name, s.offset, count);
    }
    const uint8_t* offsets = s.data + 8;
    const uint64_t byte_count = s.size - bytes_at;
    const char* bytes = reinterpret_cast<const char*>(s.data + bytes_at);
    if (Load<uint64_t>(offsets) != 0) {
      return Corrupt("section '{}' at byte {}: first string offset is not 0", name, s.offset);
    }
    if (Load<uint64_t>(offsets + 8 * count) != byte_count) {
      return Corrupt(
          "section '{}' at byte {}: last string offset {} is not the {} bytes of "
          "text",
          name, s.offset, Load<uint64_t>(offsets + 8 * count), byte_count);
    }
    table.Reserve(count);
    uint64_t begin = 0;
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t end = Load<uint64_t>(offsets + 8 * (i + 1));
      if (end < begin || end > byte_count) {
        return Corrupt("section '{}' at byte {}: string {} has offsets {}..{} outside 0..{}", name,
                       s.offset, i, begin, end, byte_count);
      }
      IdType id = table.Intern(std::string_view(bytes + begin, end - begin));
      if (id.value() != i) {
        return Corrupt("section '{}' at byte {}: string {} repeats string {}", name, s.offset, i,
                       id.value());
      }
      begin = end;
    }
    return Status::Ok();
  }

  // The kind byte is checked by Trace::FromParts with the rest of each link.
  std::vector<ProcessLink> DecodeProcessLinks() const {
    const SectionView& s = sections_[uint32_t(SectionKind::kProcessLinks) - kFirstKind];
    std::vector<ProcessLink> links(s.size / kProcessLinkSize);
    const uint8_t* p = s.data;
    for (ProcessLink& l : links) {
      l.time = Load<int64_t>(p);
      l.from = NodeId(Load<uint32_t>(p + 8));
      l.from_thread = ThreadId(Load<uint32_t>(p + 12));
      l.to = NodeId(Load<uint32_t>(p + 16));
      l.to_thread = ThreadId(Load<uint32_t>(p + 20));
      l.kind = ProcessLinkKind(p[24]);
      l.ambiguous = (p[25] & 1) != 0;
      if (l.kind == ProcessLinkKind::kHandoff) {
        uint64_t delay = 0;
        for (int b = 0; b < 6; ++b) delay |= uint64_t(p[26 + b]) << (8 * b);
        l.to_time = TimeNs(uint64_t(l.time) + delay);
      }
      p += kProcessLinkSize;
    }
    const SectionView& m = sections_[uint32_t(SectionKind::kLinkMessages) - kFirstKind];
    if (m.present) {  // its size checked against the links' before
      const uint8_t* q = m.data;
      for (ProcessLink& l : links) {
        l.from_message = MessageId(Load<uint32_t>(q));
        l.to_message = MessageId(Load<uint32_t>(q + 4));
        q += kLinkMessagesSize;
      }
    }
    return links;
  }

  template <typename T>
  void CopyColumn(SectionKind kind, std::vector<T>& column) {
    static_assert(std::is_trivially_copyable_v<T>);
    const SectionView& s = sections_[uint32_t(kind) - kFirstKind];
    const size_t count = s.size / sizeof(T);
    // Sections start 8-byte aligned in the file (ReadSectionTable): in a mapped file or a
    // malloc'd buffer the bytes are then copied straight in, without value-initializing
    // the column first.
    if (reinterpret_cast<uintptr_t>(s.data) % alignof(T) == 0) {
      const T* first = reinterpret_cast<const T*>(s.data);
      column.assign(first, first + count);
      return;
    }
    column.resize(count);
    if (count) std::memcpy(column.data(), s.data, count * sizeof(T));
  }

  static constexpr uint64_t kParallelCopyMessages = 100'000;

  std::span<const uint8_t> data_;
  std::string_view source_;
  uint32_t header_size_ = 0;
  uint32_t section_count_ = 0;
  uint64_t table_end_ = 0;
  uint64_t message_count_ = 0;
  uint64_t attribute_count_ = 0;
  std::array<SectionView, kKnownSectionCount> sections_{};
};

}  // namespace

Result<Trace> DecodeBinaryTrace(std::span<const uint8_t> data, std::string_view source) {
  return Decoder(data, source).Decode();
}

Result<Trace> ReadBinaryTrace(const std::string& path) {
  WEFT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return DecodeBinaryTrace({file.data(), file.size()}, path);
}

}  // namespace weft
