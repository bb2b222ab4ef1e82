#include "rendezvous/rendezvous_auto.h"

#include <string>

#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/slurm.h"

namespace kdist {

Result<Address> AutoRendezvous(const Environment& env) {
  Result<std::optional<SlurmAllocation>> slurm = ReadSlurmAllocation(env);
  if (!slurm.ok()) return InvalidArgument("--rendezvous auto: " + slurm.status().message());
  if (!slurm->has_value() || (*slurm)->first_host.empty()) {
    return NotFound(
        "--rendezvous auto: no scheduler allocation found (it reads Slurm's SLURM_JOB_ID and "
        "SLURM_JOB_NODELIST); give --rendezvous HOST:PORT");
  }
  const SlurmAllocation& allocation = **slurm;
  Result<uint64_t> number = ParseDigits(allocation.job_id);
  if (!number.ok()) {
    return InvalidArgument("--rendezvous auto: SLURM_JOB_ID=" + Quote(allocation.job_id) +
                           " is not a job id; expected a non-negative integer");
  }
  return HostPort(allocation.first_host,
                  static_cast<uint16_t>(kRendezvousPortBase + *number % 4096));
}

}  // namespace kdist
