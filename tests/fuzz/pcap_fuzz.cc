// libFuzzer target for the pcap import (import/pcap_import.h): any bytes either import
// (with the damage listed) or give a one-line error, never a crash, a hang or an
// out-of-bounds read. The seeds (tests/fuzz/corpus/pcap_fuzz/) are hand-built captures of
// every link type and a slice of a real tcpdump capture of the testbed, so mutations
// reach the frame decoder, the reassembly and the protocol processors.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "import/pcap_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  weft::import::PcapImportSummary summary;
  weft::Result<weft::Trace> trace = weft::import::ImportPcapBytes(
      bytes, "fuzz.pcap", weft::import::PcapImportOptions{}, &summary);
  if (trace.ok() && trace->size() != summary.messages) __builtin_trap();
  return 0;
}
