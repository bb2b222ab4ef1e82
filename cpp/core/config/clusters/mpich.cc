#include "config/clusters/mpich.h"

#include <utility>

#include "base/text.h"
#include "config/clusters/scheduler_vars.h"

namespace kdist {
namespace {

DetectResult Detect(const Environment& env) {
  constexpr std::string_view kName = "mpich";
  const std::string* local_rank = Lookup(env, "MPI_LOCALRANKID");
  if (!local_rank && !Lookup(env, "PMI_RANK") && !Lookup(env, "PMI_SIZE")) {
    return std::optional<Detection>();
  }
  // Slurm's PMI plugins (srun --mpi=pmi2) set PMI_RANK and PMI_SIZE too, but
  // not Hydra's MPI_LOCALRANKID: there the slurm detector applies.
  if (!local_rank && Lookup(env, "SLURM_STEP_NODELIST")) return std::optional<Detection>();
  std::vector<std::string_view> wanted = {"PMI_SIZE", "PMI_RANK"};
  if (!HasAll(env, wanted)) {
    if (local_rank) wanted.insert(wanted.begin(), "MPI_LOCALRANKID");
    return Incomplete(kName, env, wanted,
                      "MPICH's and Intel MPI's mpiexec (Hydra) set PMI_SIZE and PMI_RANK in "
                      "every process they start. ");
  }
  Detection d;
  d.detector = std::string(kName);
  d.num_processes = Copy("PMI_SIZE", *Lookup(env, "PMI_SIZE"));
  d.process_id = Copy("PMI_RANK", *Lookup(env, "PMI_RANK"));
  if (local_rank) d.local_rank = Copy("MPI_LOCALRANKID", *local_rank);
  if (const std::string* v = Lookup(env, "MPI_LOCALNRANKS")) {
    d.local_size = Copy("MPI_LOCALNRANKS", *v);
  }
  d.job_addresses_hint =
      "MPICH's and Intel MPI's mpiexec (Hydra) do not publish a coordinator address; set "
      "KERAS_DISTRIBUTION_JOB_ADDRESSES to the host of rank 0 and a free port in every "
      "process, e.g. `mpiexec -genv KERAS_DISTRIBUTION_JOB_ADDRESSES node01:12345 ...`";
  return std::optional<Detection>(std::move(d));
}

}  // namespace

Detector MpichDetector() {
  return {"mpich", "MPICH, Intel MPI and MVAPICH mpiexec (Hydra; no coordinator)",
          "MPI_LOCALRANKID, or PMI_RANK or PMI_SIZE outside a Slurm step",
          {"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
          &Detect};
}

}  // namespace kdist
