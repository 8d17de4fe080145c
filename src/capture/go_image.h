// Whether a program was built by the Go toolchain. A Go program makes its system calls
// itself (its runtime's syscall package), not through the C library, so a preload library,
// which interposes the C library, sees none of its I/O even when the program is dynamically
// linked (cgo, or the Debian build of a Go server): its connections show only at the ends
// that other, traced programs hold. weft capture warns of such a program, and the preload
// library marks its log (event_log_format.h, ImageRecord), so that reconcile can say which
// process was a blind spot instead of leaving its requests cut short without a word.
//
// The Go linker writes a note named "Go" (name size 4: "Go\0\0") of type 4
// (NT_GO_BUILDID, the build id) in a PT_NOTE segment of every program it links
// (cmd/link: .note.go.buildid). Header-only and free of the C++ runtime: the preload
// library uses it on its own loaded image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weft::capture {

inline constexpr uint32_t kGoBuildIdNote = 4;

// Whether the notes of one PT_NOTE segment, `size` bytes at `notes` with entries aligned to
// `align` (the segment's p_align: 4, or 8 for some), hold Go's build id note. Reads nothing
// beyond `size`; a malformed entry ends the walk.
inline bool NotesNameGo(const uint8_t* notes, size_t size, size_t align) {
  if (align != 8) align = 4;
  auto padded = [align](uint64_t n) { return (n + align - 1) / align * align; };
  size_t at = 0;
  while (at <= size && size - at >= 12) {
    uint32_t name_size, desc_size, type;
    std::memcpy(&name_size, notes + at, 4);
    std::memcpy(&desc_size, notes + at + 4, 4);
    std::memcpy(&type, notes + at + 8, 4);
    // The whole note must lie in the segment (its last padding may not).
    const uint64_t desc_at = at + 12 + padded(name_size);
    if (desc_at + desc_size > size) return false;
    // The name is "Go" and its NUL, padded with another NUL in the size cmd/link writes.
    const bool go = (name_size == 3 && std::memcmp(notes + at + 12, "Go", 3) == 0) ||
                    (name_size == 4 && std::memcmp(notes + at + 12, "Go\0", 4) == 0);
    if (type == kGoBuildIdNote && go) return true;
    at = size_t(desc_at + padded(desc_size));
  }
  return false;
}

}  // namespace weft::capture
