// HTTP/2 header blocks back to header fields with libnghttp2's HPACK inflater
// (http2_headers.h).
#include "reconcile/http2_headers.h"

#include <nghttp2/nghttp2.h>

#include <utility>

namespace weft::reconcile {

Http2HeaderDecoder::Http2HeaderDecoder() {
  if (nghttp2_hd_inflate_new(&inflater_) != 0) inflater_ = nullptr;
}

Http2HeaderDecoder::~Http2HeaderDecoder() {
  if (inflater_ != nullptr) nghttp2_hd_inflate_del(inflater_);
}

Http2HeaderDecoder::Http2HeaderDecoder(Http2HeaderDecoder&& other) noexcept
    : inflater_(std::exchange(other.inflater_, nullptr)) {}

Http2HeaderDecoder& Http2HeaderDecoder::operator=(Http2HeaderDecoder&& other) noexcept {
  if (this != &other) {
    if (inflater_ != nullptr) nghttp2_hd_inflate_del(inflater_);
    inflater_ = std::exchange(other.inflater_, nullptr);
  }
  return *this;
}

Status Http2HeaderDecoder::Break(Status why) {
  if (inflater_ != nullptr) nghttp2_hd_inflate_del(inflater_);
  inflater_ = nullptr;
  return why;
}

Status Http2HeaderDecoder::SetTableSizeLimit(uint32_t bytes) {
  if (inflater_ == nullptr)
    return Status::Corruption("HPACK: the decoder was broken by an earlier block");
  if (int rv = nghttp2_hd_inflate_change_table_size(inflater_, bytes); rv != 0) {
    return Break(Status::Corruption("HPACK: table size {}: {}", bytes, nghttp2_strerror(rv)));
  }
  return Status::Ok();
}

Status Http2HeaderDecoder::Decode(std::string_view block, std::vector<HeaderField>* fields) {
  fields->clear();
  if (inflater_ == nullptr) {
    return Status::Corruption("HPACK: the decoder was broken by an earlier block");
  }
  const auto* in = reinterpret_cast<const uint8_t*>(block.data());
  size_t left = block.size();
  size_t bytes = 0;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    // The last call (in_final) with what is left, so that a block cut short is an error.
    ssize_t used = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, /*in_final=*/1);
    if (used < 0) {
      return Break(Status::Corruption("HPACK: {} at byte {}", nghttp2_strerror(int(used)),
                                      block.size() - left));
    }
    in += used;
    left -= size_t(used);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      bytes += nv.namelen + nv.valuelen;
      if (bytes > kMaxHeaderListBytes || fields->size() >= kMaxHeaderFields) {
        return Break(Status::OutOfRange("HPACK: a block of more than {} bytes or {} fields",
                                        kMaxHeaderListBytes, kMaxHeaderFields));
      }
      fields->push_back({std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                         std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen)});
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
      nghttp2_hd_inflate_end_headers(inflater_);
      break;
    }
    if (used == 0 && (flags & NGHTTP2_HD_INFLATE_EMIT) == 0) {
      // Nothing taken, nothing given, not final: cannot happen with in_final set; never spin.
      return Break(Status::Corruption("HPACK: the inflater made no progress"));
    }
  }
  if (left != 0) {
    return Break(Status::Corruption("HPACK: {} bytes after the block's end", left));
  }
  return Status::Ok();
}

}  // namespace weft::reconcile
