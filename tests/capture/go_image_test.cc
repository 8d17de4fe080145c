// capture/go_image.h: Go's build id note found among an image's notes, and nothing read past
// a segment however its notes are damaged.
#include "capture/go_image.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace weft::capture {
namespace {

// One ELF note: sizes, type, the name and the description, each padded to `align`.
std::string Note(uint32_t type, const std::string& name, const std::string& desc,
                 size_t align = 4) {
  auto pad = [align](std::string s) {
    s.resize((s.size() + align - 1) / align * align, '\0');
    return s;
  };
  std::string out(12, '\0');
  uint32_t sizes[3] = {uint32_t(name.size()), uint32_t(desc.size()), type};
  std::memcpy(out.data(), sizes, 12);
  return out + pad(name) + pad(desc);
}

bool Go(const std::string& notes, size_t align = 4) {
  // A copy of exactly the notes' size: a read past it is a heap overflow under ASan.
  std::vector<uint8_t> bytes(notes.begin(), notes.end());
  return NotesNameGo(bytes.data(), bytes.size(), align);
}

const std::string kBuildId = Note(3, std::string("GNU\0", 4), std::string(20, 'b'));
const std::string kAbiTag = Note(1, std::string("GNU\0", 4), std::string(16, 'a'));
// As cmd/link writes it: name size 4 ("Go" and two NULs), an 83-byte build id.
const std::string kGoBuildId = Note(4, std::string("Go\0\0", 4), std::string(83, 'g'));

TEST(GoImageTest, FindsGosBuildIdAfterOtherNotes) {
  EXPECT_TRUE(Go(kGoBuildId));
  EXPECT_TRUE(Go(kBuildId + kAbiTag + kGoBuildId));  // Debian's caddy: one segment of three
  EXPECT_TRUE(Go(Note(4, std::string("Go\0", 3), "id")));
  EXPECT_TRUE(Go(Note(1, "x", "y", 8) + Note(4, std::string("Go\0\0", 4), "id", 8), 8));
}

TEST(GoImageTest, OtherNotesAreNotGo) {
  EXPECT_FALSE(Go(""));
  EXPECT_FALSE(Go(kBuildId + kAbiTag));
  EXPECT_FALSE(Go(Note(3, std::string("Go\0\0", 4), "id")));    // another type of Go's
  EXPECT_FALSE(Go(Note(4, std::string("GNU\0", 4), "id")));     // type 4 of another owner
  EXPECT_FALSE(Go(Note(4, std::string("Gopher\0", 7), "id")));  // a longer name
}

TEST(GoImageTest, DamagedNotesEndTheWalkWithinTheSegment) {
  // The Go note cut short anywhere before its description's last byte; only the padding
  // after it (one byte here) may be missing.
  std::string cut = kBuildId + kGoBuildId;
  for (size_t size = 0; size + 1 < cut.size(); ++size) {
    EXPECT_FALSE(Go(cut.substr(0, size))) << size;
  }
  EXPECT_TRUE(Go(cut.substr(0, cut.size() - 1)));
  std::string huge = kBuildId;
  uint32_t name_size = 0xfffffff0u;  // would wrap a 32-bit sum
  std::memcpy(huge.data(), &name_size, 4);
  EXPECT_FALSE(Go(huge + kGoBuildId));
  std::string long_desc = kBuildId;
  uint32_t desc_size = 0xffffffffu;
  std::memcpy(long_desc.data() + 4, &desc_size, 4);
  EXPECT_FALSE(Go(long_desc + kGoBuildId));
  EXPECT_FALSE(Go(std::string(11, '\0')));  // shorter than a note's sizes
}

}  // namespace
}  // namespace weft::capture
