// weft import pcap: a packet capture -> one message trace.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "cli/command.h"
#include "import/pcap_import.h"
#include "trace/io.h"

namespace weft::cli {

void AddImportPcapCommand(CLI::App& import, Status& result) {
  auto* cmd = import.add_subcommand(
      "pcap", "Turn a packet capture (pcap, pcapng: tcpdump, Wireshark) into a message trace");
  cmd->footer(
      "What a sniffer sees, as Project 5 and WAP5 traced systems nobody could touch: TCP is\n"
      "reassembled by sequence number per direction (retransmissions dropped, reordering\n"
      "fixed; bytes the capture missed are a gap, counted and marked pcap.gap on the next\n"
      "message, never guessed over), and each direction is cut into messages where it turns\n"
      "or where a protocol processor (as in weft capture --protocols) finds a message's end.\n"
      "UDP datagrams are one message each. The side that sent the SYN is the client: it\n"
      "sends CALLs, receives RETURNs. One time per message (its first packet's), no receive\n"
      "time. Link types: Ethernet, Linux cooked (SLL, SLL2), loopback (NULL, LOOP), raw IP.\n"
      "Prints a one-line summary; damage (a bad header, a file cut short) is one line each,\n"
      "naming the packet, and the trace of what was readable is still written (exit 1, or 0\n"
      "with --keep-going). See docs/import.md.\n\n"
      "Examples:\n"
      "  tcpdump -i lo -w run.pcap 'tcp port 8080 or tcp port 8081'\n"
      "  weft import pcap run.pcap -o run.weft\n"
      "  weft import pcap web.pcap -o web.weft --nodes ip --protocols http=8080\n"
      "  weft infer run.weft --algo nesting -o run.paths.json\n");
  static std::string input, output, nodes = "ip-port", protocols = "auto";
  static bool keep_going = false;
  cmd->add_option("file", input, "Capture file (pcap or pcapng)")->required();
  cmd->add_option("-o,--output", output, "Trace to write (.weft, text, or - for stdout)")
      ->required();
  cmd->add_option("--nodes", nodes,
                  "Node names: ip-port (servers by IP:port, clients by IP; default: processes "
                  "on one host stay apart) or ip (one node per host)")
      ->capture_default_str();
  cmd->add_option("--protocols", protocols,
                  "Protocol processors, as weft capture's: auto, none, PROTO=PORT, PROTO=auto")
      ->capture_default_str();
  cmd->add_flag("--keep-going", keep_going,
                "Exit 0 after damage in the file (the trace of what was readable is written "
                "either way)");
  cmd->callback([&result] {
    result = [&]() -> Status {
      import::PcapImportOptions options;
      WEFT_ASSIGN_OR_RETURN(options.nodes, import::ParseNodeNaming(nodes));
      options.protocols = protocols;
      import::PcapImportSummary summary;
      auto start = std::chrono::steady_clock::now();
      WEFT_ASSIGN_OR_RETURN(Trace trace, import::ImportPcapFile(input, options, &summary));
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      WEFT_RETURN_IF_ERROR(SaveTrace(trace, output));
      fmt::print(stderr, "{}: {} (read in {:.3f} s)\n", input, summary.OneLine(), seconds);
      for (const std::string& line : summary.problems) fmt::print(stderr, "damaged: {}\n", line);
      if (!summary.problems.empty() && !keep_going) {
        return Status::Corruption("{}: {} damaged part(s); the trace of what was readable is in {}",
                                  input, summary.problems.size(), output);
      }
      return Status::Ok();
    }();
  });
}

}  // namespace weft::cli
