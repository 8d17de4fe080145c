// placeholder until its owner writes it
#include "cli/command.h"
namespace weft::cli {
void AddSkewCommand(CLI::App&, Status&) {}
}  // namespace weft::cli
