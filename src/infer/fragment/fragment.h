// --algo fragment: BorderPatrol's forward scan (Koskinen and Jannotti, EuroSys'08, §4 and
// §5.5).
//
// A module's work is a sequence of fragments: a fragment begins at each input event and
// carries that input's request, and every output until the next input belongs to it
// (rules 1 and 2 of §5.5). The scan goes forward in time over each node's receives and
// sends, keeping per thread the request it is working on (the "module designation"):
//   - receiving a CALL starts a fragment for that call; one read in several reads (the
//     trace's first_read_time) starts it at its first read and again at its last, since a
//     proxy that streams a request on calls before reading its last byte (tinyproxy);
//   - receiving a RETURN resumes the request that made the call it answers (the reply
//     from a downstream server continues the upstream request, §4's SPED handlers);
//   - receiving the RETURN of a root call (a client's own request) ends the request there:
//     the client's next CALL starts a new path;
//   - a CALL or free-form message sent belongs to the sender's current fragment; a
//     RETURN to the CALL it answers;
//   - except the first CALL on a connection the sending thread opened with connect
//     (the trace's connect_time column): it belongs to the fragment that connected.
//     BorderPatrol counts connection creation as an output of the request being worked on
//     (§3) and begins a fragment when poll reports a descriptor writable (Figure 8): an
//     event loop that connects without blocking writes the call from that writable
//     fragment, possibly after its next input (nginx opening an upstream connection);
//   - but a connect made while connections the thread took up (the trace's accept_time
//     column: accepted, or tried and found empty) wait, with no input since and no request
//     read that has nothing yet (no output, no connect), opens the connection for the one
//     taken up last. A layer-4 proxy connects onward for each client it takes up, before the
//     client's request comes, then relays the request on that connection (pen as it
//     accepts; haproxy in tcp mode after trying to read the client). An input, or taking over
//     handed work (a timer's expiry), ends the wait: the thread works on that;
//   - and except a CALL with the content (method and URL, SQL, ...) of a request its node
//     read and had not acted on when another input came (set aside by the program, as
//     pgbouncer's waiting clients are, or read together with others: an HTTP/2 read): it
//     forwards that request, the first read first among several with the same content (a
//     guess, counted). Where one thread sends all of a node's messages, forwarding a
//     request set aside before (or connecting while such requests wait) is not acting on
//     the request read last, which is then set aside in turn when the next input comes: a
//     loop that queues its work (Python's asyncio) reads a request and forwards it a few
//     turns later; so is answering another request. There, after the scan, the order of
//     the replies gives each forward its request: a loop answers as replies come, but may
//     forward in any order (tasks waiting for a pool's connection). A departure:
//     BorderPatrol matches content only across untraced modules (witnesses, below);
//   - a fork or exec (the trace's process links, from reconcile) gives every thread of the
//     new process (image) the request the forking thread was in at the fork (§5.5:
//     "spawned modules consist of an implicit initial fragment"), so a CGI-style child's
//     calls and replies land in the parent's request; a thread made with pthread_create (a
//     THREAD link) gets its creator's request the same way, so a handler that fans its
//     downstream calls out over threads it spawns keeps them in its request;
//   - an inherited request lasts until the thread's own first input, or until the request
//     is answered (the RETURN to its CALL is sent), whichever comes first: then every
//     thread still holding it only by inheritance holds nothing;
//   - after the scan, a CALL that a traced module received from an untraced one continues
//     the traced CALL into that module with the same witness (HTTP URL or request id, DNS
//     id; witness.h), so paths go on through proxies nobody traced.
// The assumptions are BorderPatrol's: modules are immediate (an input is handled before
// the next is read) and independent (no hidden work queue between threads). Event
// isolation (weft capture --isolate) makes single-threaded event loops immediate; a
// dispatcher that reads requests and hands them to workers is a hidden work queue, and
// the workers' calls land in the wrong request (docs/precise.md measures it).
//
// Departures: the module is a thread of a node, not a process (threads of one process
// each keep their own designation, which multi-threaded servers need), so the spawned
// module of §5.5 is every thread of the child, and a thread spawned inside a process is a
// spawned module too (BorderPatrol follows fork and exec only). §5.5 lets the implicit
// initial fragment run until the module's first input; weft also ends it when the request
// it carries is answered: a thread a pool creates lazily while serving one request goes on
// to serve others through a queue capture cannot see, and without the bound every output
// it makes before its first input of its own would land in that first request. Work for a
// request after its answer is rare in request/response servers; work a pool thread does
// for later requests is not. A RETURN a thread receives on a call it made under an
// inherited request resumes that request, still only by inheritance.
#pragma once

#include "core/status.h"
#include "paths/inference.h"
#include "trace/trace.h"

namespace weft {

// instances and messages_in_instances: the requests found and the messages in them;
// outputs_starting_requests: messages sent outside any fragment (they start a path);
// server_calls_outside_fragments: of those, calls from nodes that serve requests (a
// hidden hand-off); messages_in_cycles; witness_links, witness_links_ambiguous and
// witnesses_unmatched (witness.h); process_links_carrying_requests;
// inherited_requests_ended_by_answer; handoffs_carrying_requests (HANDOFF links that gave
// their consumer a request), outputs_through_ambiguous_handoffs (calls and messages placed
// in a request that reached their thread through a link reconcile marked as a guess: a
// wake-up or timer shared by several requests), handoffs_contradicted_by_replies (a consumer
// answered a request other than the one handed to it: the queue was not FIFO, or a hand-over was
// missed), but for contradicted_handoffs_mended_by_replies (those where the hand-offs
// placed nothing that stands: at a node where one thread sends everything and every output
// a hand-off placed was a forward the order of the replies gave again or went to no
// request, or at a node that sends nothing but replies); inputs_sharing_a_read (requests a thread's
// read completed together with another, whose work then lands in the last of them: recapture with
// --isolate); outputs_beside_partial_inputs (calls and messages a thread sent while it had begun
// reading a call it had not read to the end, placed in another request: streamed on for the call
// being read, or for the other request, times cannot tell; not where that call has an
// output of its own besides, sent after its last read or with the same content);
// inputs_before_acting (requests a thread read another input after, in a later read, before it
// sent, connected or handed anything on, on threads that send: a loop that takes several inputs per
// turn, whose work then lands in the last of them: recapture with event isolation, weft capture's
// default); set_aside_forwards_found (of those, requests a call later forwarded, found by its
// content: the same SQL, HTTP method and URL, DNS name, ... as the request, sent in another input's
// turn, a proxy that set the request aside; their trees are whole again);
// shared_read_forwards_found (the same for requests of inputs_sharing_a_read, forwarded in
// the fragment of the read's last request); set_aside_forwards_guessed (of both, chosen
// first-come among several with the same content); set_aside_forwards_reordered (forwards
// the order of the replies gave another request than the scan did, where one thread sends
// all of a node's messages).
struct FragmentCounters {
  int64_t instances = 0;
  int64_t messages_in_instances = 0;
  int64_t outputs_starting_requests = 0;
  int64_t server_calls_outside_fragments = 0;
  int64_t messages_in_cycles = 0;
  int64_t witness_links = 0;
  int64_t witness_links_ambiguous = 0;
  int64_t witnesses_unmatched = 0;
  int64_t process_links_carrying_requests = 0;
  int64_t inherited_requests_ended_by_answer = 0;
  int64_t handoffs_carrying_requests = 0;
  int64_t outputs_through_ambiguous_handoffs = 0;
  int64_t handoffs_contradicted_by_replies = 0;
  int64_t contradicted_handoffs_mended_by_replies = 0;
  int64_t inputs_sharing_a_read = 0;
  int64_t outputs_beside_partial_inputs = 0;
  int64_t inputs_before_acting = 0;
  int64_t set_aside_forwards_found = 0;
  int64_t shared_read_forwards_found = 0;
  int64_t set_aside_forwards_guessed = 0;
  int64_t set_aside_forwards_reordered = 0;
  // Name and value of each, in the order paths files and `weft paths` list them.
  CounterList List() const {
    return {{"instances", instances},
            {"messages_in_instances", messages_in_instances},
            {"outputs_starting_requests", outputs_starting_requests},
            {"server_calls_outside_fragments", server_calls_outside_fragments},
            {"messages_in_cycles", messages_in_cycles},
            {"witness_links", witness_links},
            {"witness_links_ambiguous", witness_links_ambiguous},
            {"witnesses_unmatched", witnesses_unmatched},
            {"process_links_carrying_requests", process_links_carrying_requests},
            {"inherited_requests_ended_by_answer", inherited_requests_ended_by_answer},
            {"handoffs_carrying_requests", handoffs_carrying_requests},
            {"outputs_through_ambiguous_handoffs", outputs_through_ambiguous_handoffs},
            {"handoffs_contradicted_by_replies", handoffs_contradicted_by_replies},
            {"contradicted_handoffs_mended_by_replies", contradicted_handoffs_mended_by_replies},
            {"inputs_sharing_a_read", inputs_sharing_a_read},
            {"outputs_beside_partial_inputs", outputs_beside_partial_inputs},
            {"inputs_before_acting", inputs_before_acting},
            {"set_aside_forwards_found", set_aside_forwards_found},
            {"shared_read_forwards_found", shared_read_forwards_found},
            {"set_aside_forwards_guessed", set_aside_forwards_guessed},
            {"set_aside_forwards_reordered", set_aside_forwards_reordered}};
  }
};
using FragmentInference = Inference<FragmentCounters>;

// An error if no message has a thread (the trace was not reconciled from a capture).
Result<FragmentInference> InferFragment(const Trace& trace);

}  // namespace weft
