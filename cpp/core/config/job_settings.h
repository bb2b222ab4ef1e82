// The settings of initialize() that do not describe the cluster: the deadlines
// (kdist's, JAX's heartbeat and shutdown, the unreachable window), the policies
// (on_peer_failure, consistency), the stop signals and the stall watchdog, the
// roll call (on/off, its token), TLS for JAX's service (config/tls_settings.h) and the
// scheduler detection mode. Each from its
// argument, else its variable, else its default, parsed once into the spec.
#ifndef KDIST_CONFIG_JOB_SETTINGS_H_
#define KDIST_CONFIG_JOB_SETTINGS_H_

#include "base/environment.h"
#include "base/status.h"
#include "config/cluster_spec.h"
#include "config/resolve.h"

namespace kdist {

// Fills those settings of `spec`. Resolve() calls it first, so that a bad one is
// reported even when the cluster settings are also missing.
Status ResolveJobSettings(const Request& request, const Environment& env, ClusterSpec& spec);

}  // namespace kdist

#endif  // KDIST_CONFIG_JOB_SETTINGS_H_
