// `kdist launch --nodes ... --rendezvous auto`: where the nodes' rendezvous is under a
// scheduler, from its environment alone (a pure function of the snapshot).
//
// Slurm: the first host of the allocation (SLURM_JOB_NODELIST, else SLURM_NODELIST), on
// port kRendezvousPortBase + SLURM_JOB_ID % 4096: the 4096 ports just below those the
// detectors derive JAX's coordinator port from (config/clusters/scheduler_vars.h), so
// the rendezvous and the job's coordinator never share a port.
#ifndef KDIST_RENDEZVOUS_RENDEZVOUS_AUTO_H_
#define KDIST_RENDEZVOUS_RENDEZVOUS_AUTO_H_

#include <cstdint>

#include "base/environment.h"
#include "base/status.h"
#include "config/clusters/scheduler_vars.h"
#include "net/address.h"

namespace kdist {

inline constexpr uint64_t kRendezvousPortBase = kDerivedPortBase - 4096;

// The rendezvous of a Slurm job; kNotFound when no Slurm allocation is in `env`,
// kInvalidArgument naming the variable when one is malformed.
Result<Address> AutoRendezvous(const Environment& env);

}  // namespace kdist

#endif  // KDIST_RENDEZVOUS_RENDEZVOUS_AUTO_H_
