#include "trace/binary_format.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/file.h"
#include "trace/io.h"
#include "trace_testing.h"

namespace weft {
namespace {

// An independent writer of the layout in docs/formats.md, so tests can build files the
// encoder never writes (extra, missing or damaged sections with valid checksums).
struct Section {
  uint32_t kind;
  uint32_t flags;
  std::string bytes;
};

template <typename T>
T Get(const std::string& file, size_t at) {
  T v;
  std::memcpy(&v, file.data() + at, sizeof v);
  return v;
}

template <typename T>
void Put(std::string& file, size_t at, T v) {
  std::memcpy(file.data() + at, &v, sizeof v);
}

std::vector<Section> Split(const std::string& file) {
  std::vector<Section> sections;
  uint32_t count = Get<uint32_t>(file, 32);
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = 64 + 32 * i;
    sections.push_back({Get<uint32_t>(file, e), Get<uint32_t>(file, e + 4),
                        file.substr(Get<uint64_t>(file, e + 8), Get<uint64_t>(file, e + 16))});
  }
  return sections;
}

void FixHeaderChecksum(std::string& file) {
  size_t table_end = 64 + 32 * size_t(Get<uint32_t>(file, 32));
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, file.data(), 56);
  XXH3_64bits_update(state, file.data() + 64, table_end - 64);
  Put<uint64_t>(file, 56, XXH3_64bits_digest(state));
  XXH3_freeState(state);
}

std::string Assemble(const std::vector<Section>& sections, uint64_t messages, uint64_t attributes) {
  std::string file(64 + 32 * sections.size(), '\0');
  for (size_t i = 0; i < sections.size(); ++i) {
    file.resize((file.size() + 7) / 8 * 8, '\0');
    size_t e = 64 + 32 * i;
    Put<uint32_t>(file, e, sections[i].kind);
    Put<uint32_t>(file, e + 4, sections[i].flags);
    Put<uint64_t>(file, e + 8, file.size());
    Put<uint64_t>(file, e + 16, sections[i].bytes.size());
    Put<uint64_t>(file, e + 24, XXH3_64bits(sections[i].bytes.data(), sections[i].bytes.size()));
    file += sections[i].bytes;
  }
  file.resize((file.size() + 7) / 8 * 8, '\0');
  std::memcpy(file.data(), kBinaryTraceMagic.data(), 8);
  Put<uint32_t>(file, 8, 1);
  Put<uint32_t>(file, 12, 64);
  Put<uint64_t>(file, 16, messages);
  Put<uint64_t>(file, 24, attributes);
  Put<uint32_t>(file, 32, uint32_t(sections.size()));
  Put<uint64_t>(file, 40, file.size());
  FixHeaderChecksum(file);
  return file;
}

Result<Trace> Decode(const std::string& file) {
  return DecodeBinaryTrace({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, "t.weft");
}

std::string DecodeError(const std::string& file) {
  auto t = Decode(file);
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.status().message();
}

TEST(BinaryFormat, RoundTripKeepsEverything) {
  Trace original = testing::SampleTrace();
  std::string file = EncodeBinaryTrace(original);
  auto decoded = Decode(file);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  testing::ExpectIdenticalTrace(original, *decoded);
  EXPECT_EQ(EncodeBinaryTrace(*decoded), file);
}

TEST(BinaryFormat, LayoutMatchesTheDocumentation) {
  Trace t = testing::SampleTrace();
  std::string file = EncodeBinaryTrace(t);
  EXPECT_EQ(file.substr(0, 8), kBinaryTraceMagic);
  EXPECT_EQ(Get<uint32_t>(file, 8), 1u);    // version
  EXPECT_EQ(Get<uint32_t>(file, 12), 64u);  // header size
  EXPECT_EQ(Get<uint64_t>(file, 16), 4u);   // messages
  EXPECT_EQ(Get<uint64_t>(file, 24), 3u);   // attributes
  EXPECT_EQ(Get<uint32_t>(file, 32), 16u);  // sections
  EXPECT_EQ(Get<uint64_t>(file, 40), file.size());
  std::vector<Section> sections = Split(file);
  ASSERT_EQ(sections.size(), 16u);
  for (uint32_t i = 0; i < 16; ++i) {
    EXPECT_EQ(sections[i].kind, i + 1);
    EXPECT_EQ(sections[i].flags, 0u);
  }
  EXPECT_EQ(Get<uint64_t>(file, 64 + 8), 64u + 16 * 32);  // first section right after the table
  // Node names: u32 count, u32 zero, u64 offsets[count + 1], the bytes.
  const std::string& names = sections[0].bytes;
  ASSERT_EQ(names.size(), 8u + 4 * 8 + 13);
  EXPECT_EQ(Get<uint32_t>(names, 0), 3u);
  EXPECT_EQ(Get<uint32_t>(names, 4), 0u);
  EXPECT_EQ(Get<uint64_t>(names, 8), 0u);
  EXPECT_EQ(Get<uint64_t>(names, 16), 3u);
  EXPECT_EQ(Get<uint64_t>(names, 24), 7u);
  EXPECT_EQ(Get<uint64_t>(names, 32), 13u);
  EXPECT_EQ(names.substr(40), "webdb 1client");
  // Column widths: 8, 8, 4, 4, 1, 4, 8, 4, 4, 4, 4, 4, 4 bytes per message; 12 per attribute.
  const size_t widths[] = {8, 8, 4, 4, 1, 4, 8, 4, 4, 4, 4, 4, 4};
  for (size_t i = 0; i < 13; ++i) EXPECT_EQ(sections[2 + i].bytes.size(), 4 * widths[i]) << i;
  EXPECT_EQ(Get<int64_t>(sections[2].bytes, 8), 1047680084482205000);  // send_time[1]
  EXPECT_EQ(Get<int64_t>(sections[2].bytes, 0), kNoTime);              // send_time[0]
  EXPECT_EQ(sections[6].bytes, std::string("\x02\x00\x01\x02", 4));    // kinds
  EXPECT_EQ(Get<uint32_t>(sections[14].bytes, 0), 0xffffffffu);        // truth_parent[0]
  EXPECT_EQ(Get<uint32_t>(sections[14].bytes, 4), 0u);                 // truth_parent[1]
  EXPECT_EQ(sections[15].bytes.size(), 3u * 12);
  EXPECT_EQ(Get<uint32_t>(sections[15].bytes, 12), 1u);  // attribute 1 is on message 1
  // An independent writer of the documented layout produces the same bytes.
  EXPECT_EQ(Assemble(sections, 4, 3), file);
}

TEST(BinaryFormat, EmptyTrace) {
  Trace empty;
  std::string file = EncodeBinaryTrace(empty);
  // Header, 16 table entries, two string tables of 16 bytes, empty columns.
  EXPECT_EQ(file.size(), 64u + 16 * 32 + 16 + 16);
  auto t = Decode(file);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->size(), 0u);
  EXPECT_EQ(t->nodes().size(), 0u);
  EXPECT_EQ(t->strings().size(), 0u);
  EXPECT_TRUE(t->attributes().empty());
}

TEST(BinaryFormat, EveryTruncationIsAnError) {
  std::string file = EncodeBinaryTrace(testing::SampleTrace());
  for (size_t n = 0; n < file.size(); ++n) {
    auto t = Decode(file.substr(0, n));
    ASSERT_FALSE(t.ok()) << "length " << n;
    EXPECT_EQ(t.status().code(), StatusCode::kCorruption) << n;
    EXPECT_NE(t.status().message().find("truncated"), std::string::npos)
        << n << ": " << t.status().message();
  }
  EXPECT_EQ(DecodeError(""), "t.weft: truncated: empty file, not a weft binary trace");
  EXPECT_EQ(DecodeError(file.substr(0, 5)),
            "t.weft: truncated: 5 bytes, shorter than the 64-byte header");
  EXPECT_EQ(DecodeError(file.substr(0, 63)),
            "t.weft: truncated: 63 bytes, shorter than the 64-byte header");
  EXPECT_EQ(DecodeError(file.substr(0, 100)),
            fmt::format("t.weft: truncated: the header at byte 40 records {} bytes, the file "
                        "has 100",
                        file.size()));
}

TEST(BinaryFormat, EverySingleByteFlipIsAnErrorOrHarmless) {
  Trace original = testing::SampleTrace();
  const std::string file = EncodeBinaryTrace(original);
  int errors = 0;
  int harmless = 0;
  for (size_t i = 0; i < file.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string damaged = file;
      damaged[i] = char(damaged[i] ^ mask);
      auto t = Decode(damaged);
      if (!t.ok()) {
        ++errors;
        EXPECT_EQ(t.status().message().rfind("t.weft: ", 0), 0u) << t.status().message();
        continue;
      }
      ++harmless;
      SCOPED_TRACE(fmt::format("byte {} ^ {:#x}", i, mask));
      testing::ExpectIdenticalTrace(original, *t);
    }
  }
  // Only the zero padding between sections is not covered by a checksum.
  EXPECT_GT(errors, 0);
  size_t padding = 0;
  std::vector<Section> sections = Split(file);
  for (size_t i = 0; i < sections.size(); ++i) {
    size_t end = Get<uint64_t>(file, 64 + 32 * i + 8) + sections[i].bytes.size();
    padding += (8 - end % 8) % 8;
  }
  EXPECT_EQ(size_t(harmless), 3 * padding);
}

TEST(BinaryFormat, BadMagicAndUnsupportedVersion) {
  std::string file = EncodeBinaryTrace(testing::SampleTrace());
  std::string bad_magic = file;
  bad_magic[1] = 'X';
  EXPECT_EQ(DecodeError(bad_magic), "t.weft: not a weft binary trace (bad magic at byte 0)");
  std::string v2 = file;
  Put<uint32_t>(v2, 8, 2);
  auto t = Decode(v2);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(t.status().message(),
            "t.weft: unsupported version 2 at byte 8 (this weft reads version 1)");
}

TEST(BinaryFormat, HeaderErrors) {
  std::string file = EncodeBinaryTrace(testing::SampleTrace());
  std::string trailing = file + std::string(8, '\0');
  EXPECT_EQ(DecodeError(trailing),
            fmt::format("t.weft: the header at byte 40 records {} bytes, the file has {} "
                        "(trailing data)",
                        file.size(), file.size() + 8));
  std::string header_size = file;
  Put<uint32_t>(header_size, 12, 60);
  EXPECT_EQ(DecodeError(header_size),
            "t.weft: bad header size 60 at byte 12 (want a multiple of 8, at least 64)");
  std::string sections = file;
  Put<uint32_t>(sections, 32, 1000);
  EXPECT_EQ(DecodeError(sections),
            fmt::format("t.weft: bad section count 1000 at byte 32: the section table would "
                        "end at byte 32064, past the end of the file ({} bytes)",
                        file.size()));
  std::string messages = file;
  Put<uint64_t>(messages, 16, 5);
  EXPECT_EQ(DecodeError(messages).rfind("t.weft: header checksum mismatch (bytes 0-63 and the "
                                        "section table; recorded ",
                                        0),
            0u);
  FixHeaderChecksum(messages);
  EXPECT_EQ(DecodeError(messages),
            fmt::format("t.weft: section 'send_time' at byte {} has 32 bytes, want 40 (5 x 8 "
                        "bytes)",
                        Get<uint64_t>(file, 64 + 32 * 2 + 8)));
  std::string huge = file;
  Put<uint64_t>(huge, 16, uint64_t(1) << 40);
  FixHeaderChecksum(huge);
  EXPECT_EQ(DecodeError(huge), "t.weft: bad message count 1099511627776 at byte 16");
}

TEST(BinaryFormat, SectionTableErrors) {
  Trace trace = testing::SampleTrace();
  const std::string file = EncodeBinaryTrace(trace);
  const uint64_t receiver_at = Get<uint64_t>(file, 64 + 32 * 5 + 8);

  std::string checksum = file;
  checksum[receiver_at + 2] ^= 1;
  EXPECT_EQ(DecodeError(checksum).rfind(
                fmt::format("t.weft: section 'receiver' (bytes {}..{}) checksum mismatch: "
                            "recorded ",
                            receiver_at, receiver_at + 16),
                0),
            0u);

  std::string past_end = file;
  Put<uint64_t>(past_end, 64 + 32 * 5 + 16, 9000);
  FixHeaderChecksum(past_end);
  EXPECT_EQ(DecodeError(past_end),
            fmt::format("t.weft: truncated: section 'receiver' ends at byte {} past the end of "
                        "the file ({} bytes)",
                        receiver_at + 9000, file.size()));

  std::string overflow = file;
  Put<uint64_t>(overflow, 64 + 32 * 5 + 16, ~uint64_t(0) - 4);
  FixHeaderChecksum(overflow);
  EXPECT_NE(DecodeError(overflow).find("truncated: section 'receiver' ends at byte"),
            std::string::npos);

  std::string outside = file;
  Put<uint64_t>(outside, 64 + 32 * 5 + 8, 8);
  FixHeaderChecksum(outside);
  EXPECT_EQ(DecodeError(outside),
            fmt::format("t.weft: section 'receiver' (table entry 5 at byte 224) starts at byte "
                        "8, outside 576..{}",
                        file.size()));

  std::string misaligned = file;
  Put<uint64_t>(misaligned, 64 + 32 * 5 + 8, receiver_at + 4);
  FixHeaderChecksum(misaligned);
  EXPECT_EQ(DecodeError(misaligned),
            fmt::format("t.weft: section 'receiver' starts at byte {}, not a multiple of 8",
                        receiver_at + 4));

  std::vector<Section> sections = Split(file);
  std::vector<Section> duplicate = sections;
  duplicate[3].kind = 3;
  EXPECT_EQ(DecodeError(Assemble(duplicate, 4, 3)),
            "t.weft: section 'send_time' appears twice (second at table entry 3, byte 160)");
  std::vector<Section> missing = sections;
  missing.pop_back();
  EXPECT_EQ(DecodeError(Assemble(missing, 4, 3)),
            "t.weft: required section 'attributes' is missing");
}

TEST(BinaryFormat, UnknownSectionsAreSkippedUnlessRequired) {
  Trace trace = testing::SampleTrace();
  std::vector<Section> sections = Split(EncodeBinaryTrace(trace));
  sections.insert(sections.begin() + 4, Section{99, 0, "future data"});
  auto t = Decode(Assemble(sections, 4, 3));
  ASSERT_TRUE(t.ok()) << t.status().message();
  testing::ExpectIdenticalTrace(trace, *t);
  sections[4].flags = 1;
  EXPECT_EQ(DecodeError(Assemble(sections, 4, 3)),
            "t.weft: section kind 99 at byte 192 is required but unknown to this weft");
}

TEST(BinaryFormat, StringTableErrors) {
  std::vector<Section> sections = Split(EncodeBinaryTrace(testing::SampleTrace()));
  auto with_names = [&](std::string names) {
    std::vector<Section> s = sections;
    s[0].bytes = std::move(names);
    return DecodeError(Assemble(s, 4, 3));
  };
  const std::string names = sections[0].bytes;  // 3 names: offsets 0, 3, 7, 13
  EXPECT_EQ(with_names(names.substr(0, 12)),
            "t.weft: section 'node_names' at byte 576 has 12 bytes, too small for a string table");
  std::string too_many = names;
  Put<uint32_t>(too_many, 0, 1000);
  EXPECT_EQ(with_names(too_many),
            "t.weft: section 'node_names' at byte 576: 1000 strings need 8016 bytes of offsets, "
            "the section has 53");
  std::string first = names;
  Put<uint64_t>(first, 8, 1);
  EXPECT_EQ(with_names(first),
            "t.weft: section 'node_names' at byte 576: first string offset is "
            "not 0");
  std::string last = names;
  Put<uint64_t>(last, 32, 12);
  EXPECT_EQ(with_names(last),
            "t.weft: section 'node_names' at byte 576: last string offset 12 "
            "is not the 13 bytes of text");
  std::string backwards = names;
  Put<uint64_t>(backwards, 24, 2);
  EXPECT_EQ(with_names(backwards),
            "t.weft: section 'node_names' at byte 576: string 1 has "
            "offsets 3..2 outside 0..13");
  std::string beyond = names;
  Put<uint64_t>(beyond, 24, 14);
  EXPECT_EQ(with_names(beyond),
            "t.weft: section 'node_names' at byte 576: string 1 has "
            "offsets 3..14 outside 0..13");
  std::string repeated = names;
  repeated.replace(40, 13, "webwebbclient");
  Put<uint64_t>(repeated, 24, 6);
  EXPECT_EQ(with_names(repeated),
            "t.weft: section 'node_names' at byte 576: string 1 repeats string 0");
}

TEST(BinaryFormat, TraceRulesAreCheckedAfterDecoding) {
  std::vector<Section> sections = Split(EncodeBinaryTrace(testing::SampleTrace()));
  std::vector<Section> bad_node = sections;
  Put<uint32_t>(bad_node[4].bytes, 0, 3);  // sender of message 0: only 3 nodes
  EXPECT_EQ(DecodeError(Assemble(bad_node, 4, 3)),
            "t.weft: message 0 names a node that does not exist");
  std::vector<Section> bad_order = sections;
  Put<int64_t>(bad_order[2].bytes, 24, 5);  // send_time of message 3
  EXPECT_EQ(DecodeError(Assemble(bad_order, 4, 3)), "t.weft: message 3 is out of time order");
  std::vector<Section> bad_kind = sections;
  bad_kind[6].bytes[1] = 7;
  EXPECT_EQ(DecodeError(Assemble(bad_kind, 4, 3)), "t.weft: message 1 has unknown kind 7");
}

class BinaryFileTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) {
    std::string path = ::testing::TempDir() + "weft_binary_format_test_" + name;
    created_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& p : created_) std::remove(p.c_str());
  }
  std::vector<std::string> created_;
};

TEST_F(BinaryFileTest, WriteReadAndLoadTrace) {
  Trace original = testing::SampleTrace();
  std::string path = Path("rt.weft");
  ASSERT_TRUE(WriteBinaryTrace(original, path).ok());
  auto read = ReadBinaryTrace(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  testing::ExpectIdenticalTrace(original, *read);
  auto loaded = LoadTrace(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  testing::ExpectIdenticalTrace(original, *loaded);
  // SaveTrace picks binary for .weft.
  std::string saved = Path("saved.weft");
  ASSERT_TRUE(SaveTrace(original, saved).ok());
  auto bytes = ReadFile(saved);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, EncodeBinaryTrace(original));
}

TEST_F(BinaryFileTest, MissingEmptyAndTruncatedFilesThroughLoadTrace) {
  std::string missing = Path("missing.weft");
  auto t = LoadTrace(missing);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t.status().message(), missing + ": No such file or directory");
  auto r = ReadBinaryTrace(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), missing + ": No such file or directory");

  std::string empty = Path("empty.weft");
  ASSERT_TRUE(WriteFile(empty, "").ok());
  t = LoadTrace(empty);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), empty + ": empty file, not a trace");

  std::string cut = Path("cut.weft");
  std::string file = EncodeBinaryTrace(testing::SampleTrace());
  ASSERT_TRUE(WriteFile(cut, std::string_view(file).substr(0, 700)).ok());
  t = LoadTrace(cut);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            fmt::format("{}: truncated: the header at byte 40 records {} bytes, the file has 700",
                        cut, file.size()));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Section 17 holds process links: optional, 32 bytes each, checked like the rest.
TEST(BinaryFormat, ProcessLinkErrors) {
  std::vector<Section> sections = Split(EncodeBinaryTrace(testing::SampleTrace()));
  ASSERT_EQ(sections.size(), 16u);  // no links: no section 17
  std::string link(32, '\0');
  Put<int64_t>(link, 0, 1000);
  Put<uint32_t>(link, 12, 7);  // from node 0, thread 7
  Put<uint32_t>(link, 16, 1);  // to node 1
  Put<uint32_t>(link, 20, 9);  // thread 9
  link[24] = 1;                // EXEC
  std::vector<Section> with = sections;
  with.push_back({17, 0, link});
  Result<Trace> ok = Decode(Assemble(with, 4, 3));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->process_links().size(), 1u);
  EXPECT_EQ(ok->process_links()[0].kind, ProcessLinkKind::kExec);
  EXPECT_EQ(ok->process_links()[0].to_thread, ThreadId(9));
  std::vector<Section> short_section = with;
  short_section.back().bytes.resize(31);
  EXPECT_EQ(DecodeError(Assemble(short_section, 4, 3)),
            "t.weft: section 'process_links' at byte 1112 has 31 bytes, not a multiple of 32");
  std::vector<Section> thread = with;
  thread.back().bytes[24] = 2;  // THREAD
  Result<Trace> thread_link = Decode(Assemble(thread, 4, 3));
  ASSERT_TRUE(thread_link.ok()) << thread_link.status().message();
  EXPECT_EQ(thread_link->process_links()[0].kind, ProcessLinkKind::kThread);
  EXPECT_EQ(Split(EncodeBinaryTrace(*thread_link)).back().bytes,
            thread.back().bytes);  // written as read
  std::vector<Section> bad_kind = with;
  bad_kind.back().bytes[24] = 4;
  EXPECT_EQ(DecodeError(Assemble(bad_kind, 4, 3)),
            "t.weft: process link 0 has no time, an unknown node, thread or kind");
  std::vector<Section> bad_node = with;
  Put<uint32_t>(bad_node.back().bytes, 16, 3);  // only 3 nodes
  EXPECT_EQ(DecodeError(Assemble(bad_node, 4, 3)),
            "t.weft: process link 0 has no time, an unknown node, thread or kind");
  std::vector<Section> out_of_order = with;
  out_of_order.back().bytes += link;
  Put<int64_t>(out_of_order.back().bytes, 32, 999);
  EXPECT_EQ(DecodeError(Assemble(out_of_order, 4, 3)),
            "t.weft: process link 1 is out of time order");
}

}  // namespace
}  // namespace weft
