#include "rendezvous/rendezvous_auto.h"

#include <string>
#include <vector>

#include "base/scalars.h"
#include "base/text.h"
#include "config/clusters/slurm_hostlist.h"

namespace kdist {

Result<Address> AutoRendezvous(const Environment& env) {
  const std::string* job_id = Lookup(env, "SLURM_JOB_ID");
  const std::string* nodelist = Lookup(env, "SLURM_JOB_NODELIST");
  if (nodelist == nullptr) nodelist = Lookup(env, "SLURM_NODELIST");
  if (job_id == nullptr || nodelist == nullptr) {
    return NotFound(
        "--rendezvous auto: no scheduler allocation found (it reads Slurm's SLURM_JOB_ID and "
        "SLURM_JOB_NODELIST); give --rendezvous HOST:PORT");
  }
  Result<uint64_t> number = ParseDigits(*job_id);
  if (!number.ok()) {
    return InvalidArgument("--rendezvous auto: SLURM_JOB_ID=" + Quote(*job_id) +
                           " is not a job id; expected a non-negative integer");
  }
  Result<std::vector<std::string>> hosts = ExpandHostList(*nodelist);
  if (!hosts.ok() || hosts->empty()) {
    return InvalidArgument("--rendezvous auto: SLURM_JOB_NODELIST=" + Quote(*nodelist) +
                           " lists no host" +
                           (hosts.ok() ? std::string() : " (" + hosts.status().message() + ")"));
  }
  return HostPort(hosts->front(), static_cast<uint16_t>(kRendezvousPortBase + *number % 4096));
}

}  // namespace kdist
