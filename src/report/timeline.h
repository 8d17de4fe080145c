// Timelines of path patterns in the style of WAP5 §6.1 (Figures 10, 12-14): time flows
// left to right; a node appears each time a message reaches it (so a node that makes a
// call appears again when the return arrives); a message is an arrow labelled with its
// mean one-way network latency when both ends were timed and clock offsets are known; the
// time a node spends before sending is the gap between the arrival it acts on and the
// arrow it sends. A node that was not traced cannot separate its own time from the
// network's: the round trip through it is drawn as a diamond with the total.
//
// Times are means over the pattern's instances (weighted by probability for linking), laid
// end to end from the root's send, so the drawing shows where the mean request's time goes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/time.h"
#include "paths/path_set.h"

namespace weft {

// One element of a pattern placed on the mean timeline (events[k] is element k).
struct TimelineEvent {
  double send = 0;        // ns after the root's send
  double arrive = 0;      // ns after the root's send
  double node_delay = 0;  // the sender's own mean time before sending: since the latest
                          // arrival at it (or a round trip, below)
  bool node_delay_known = false;
  double network = 0;  // mean one-way latency, if known
  bool network_known = false;
  bool round_trip = false;  // node_delay is a round trip through an untraced sender
};

std::vector<TimelineEvent> LayOutTimeline(const PathSet& set, uint32_t pattern);

// The timeline as text, one line per message in order of sending.
std::string TimelineText(const PathSet& set, uint32_t pattern);
// The timeline as a standalone SVG drawing.
std::string TimelineSvg(const PathSet& set, uint32_t pattern);

// Per node (by name), the distribution of its own delays before sending (WAP5 Figure 11)
// over all patterns: the delays that are its own time and not its callees' (timeline.cc
// says which those are).
std::map<std::string, LatencyHistogram> NodeOwnDelays(const PathSet& set);

// Per node, the distribution of its own delays before sending (WAP5 Figure 11) over all
// patterns, as text: quantiles and a bar per power-of-two range.
std::string NodeDelayHistograms(const PathSet& set);

}  // namespace weft
