// kdist._core's nodes' rendezvous (`kdist launch --nodes`): the rendezvous's server
// and a machine's agent side, as bound classes.
#ifndef KDIST_BINDINGS_RENDEZVOUS_BINDINGS_H_
#define KDIST_BINDINGS_RENDEZVOUS_BINDINGS_H_

#include <nanobind/nanobind.h>

namespace kdist::bindings {

// Binds NodeRequest, NodeSettings and resolve_node_settings, RendezvousServer,
// RendezvousAgent, NodeReply and the agents' exit statuses (EXIT_NOT_ENOUGH_NODES,
// EXIT_LOST_RENDEZVOUS, EXIT_DRAINED) into `m`.
void BindRendezvous(nanobind::module_& m);

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_RENDEZVOUS_BINDINGS_H_
