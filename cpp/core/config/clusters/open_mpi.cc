#include "config/clusters/open_mpi.h"

#include <utility>

#include "base/text.h"
#include "config/clusters/ompi_uri.h"
#include "config/clusters/scheduler_vars.h"
#include "net/address.h"

namespace kdist {
namespace {

// "node01" of "node01.cluster.example": host names compared as short names.
std::string_view ShortName(std::string_view host) { return host.substr(0, host.find('.')); }

// Open MPI 5 (PRRTE): mpirun's host name and pid, from PMIX_NAMESPACE. Rank 0
// runs on mpirun's host unless a host file or --map-by says otherwise; rank 0
// checks that with PMIX_HOSTNAME, so a job whose rank 0 runs elsewhere stops
// with the hint instead of waiting for a coordinator nobody serves.
DetectResult OmpiFromPmixNamespace(const Environment& env, std::string_view rank,
                                   Detection d) {
  constexpr std::string_view kName = "ompi";
  const std::string explicit_way =
      "set KERAS_DISTRIBUTION_JOB_ADDRESSES to the host of rank 0 and a free port in every "
      "process, e.g. `mpirun -x KERAS_DISTRIBUTION_JOB_ADDRESSES=node01:12345 ...`";
  const std::string* ns_text = Lookup(env, "PMIX_NAMESPACE");
  Result<PrrteNamespace> ns =
      ns_text ? ParsePrrteNamespace(*ns_text) : Result<PrrteNamespace>(NotFound(""));
  if (!ns.ok()) {
    d.job_addresses_hint =
        "Open MPI 5 (PRRTE) does not publish the address of mpirun's host (Open MPI 4 did, in "
        "OMPI_MCA_orte_hnp_uri), and " +
        (ns_text ? Shown("PMIX_NAMESPACE", *ns_text) + " is not in mpirun's form "
                                                       "prterun-<host>-<pid>@<job>"
                 : std::string("PMIX_NAMESPACE is not set")) +
        "; " + explicit_way;
    return std::optional<Detection>(std::move(d));
  }
  const std::string* own_host = Lookup(env, "PMIX_HOSTNAME");
  if (rank == "0" && own_host != nullptr && ShortName(*own_host) != ShortName(ns->host)) {
    d.job_addresses_hint = "rank 0 runs on " + Shown("PMIX_HOSTNAME", *own_host) +
                           ", not on mpirun's host " + Quote(ns->host) + " (" +
                           Shown("PMIX_NAMESPACE", *ns_text) +
                           "), so the coordinator cannot be derived; " + explicit_way;
    return std::optional<Detection>(std::move(d));
  }
  // A port in JAX's derived range, from mpirun's pid and job number: every
  // process of the job computes the same one.
  PortChoice port{static_cast<uint16_t>(kDerivedPortBase + (ns->pid * 16 + ns->job) % 4096),
                  "PMIX_NAMESPACE"};
  std::string shown = Shown("PMIX_NAMESPACE", *ns_text);
  KDIST_RETURN_IF_ERROR(ApplyPortOverride(kName, env, port, &shown).status());
  Result<Address> coordinator = HostPort(ns->host, port.port);
  if (!coordinator.ok()) {
    return Malformed(kName, "PMIX_NAMESPACE", *ns_text,
                     "names host " + Quote(ns->host) + ", which " +
                         coordinator.status().message());
  }
  const std::string variables =
      port.variable == "PMIX_NAMESPACE" ? port.variable : "PMIX_NAMESPACE, " + port.variable;
  d.job_addresses = DetectedValue{coordinator->ToString(), variables, shown};
  return std::optional<Detection>(std::move(d));
}

DetectResult Detect(const Environment& env) {
  constexpr std::string_view kName = "ompi";
  const std::string* size = Lookup(env, "OMPI_COMM_WORLD_SIZE");
  const std::string* rank = Lookup(env, "OMPI_COMM_WORLD_RANK");
  const std::string* hnp_uri = Lookup(env, "OMPI_MCA_orte_hnp_uri");
  if (!size && !rank && !hnp_uri) return std::optional<Detection>();
  std::string_view rank_name = "OMPI_COMM_WORLD_RANK";
  if (!rank && (rank = Lookup(env, "PMIX_RANK"))) rank_name = "PMIX_RANK";
  if (!size || !rank) {
    std::vector<std::string_view> wanted = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"};
    if (hnp_uri) wanted.insert(wanted.begin(), "OMPI_MCA_orte_hnp_uri");
    return Incomplete(kName, env, wanted,
                      "Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE and OMPI_COMM_WORLD_RANK in "
                      "every process it starts. ");
  }

  Detection d;
  d.detector = std::string(kName);
  d.num_processes = Copy("OMPI_COMM_WORLD_SIZE", *size);
  d.process_id = Copy(rank_name, *rank);
  if (const std::string* v = Lookup(env, "OMPI_COMM_WORLD_LOCAL_RANK")) {
    d.local_rank = Copy("OMPI_COMM_WORLD_LOCAL_RANK", *v);
  }
  if (const std::string* v = Lookup(env, "OMPI_COMM_WORLD_LOCAL_SIZE")) {
    d.local_size = Copy("OMPI_COMM_WORLD_LOCAL_SIZE", *v);
  }
  if (hnp_uri == nullptr) return OmpiFromPmixNamespace(env, *rank, std::move(d));
  Result<OmpiHnpUri> uri = ParseOmpiHnpUri(*hnp_uri);
  if (!uri.ok()) {
    return Malformed(kName, "OMPI_MCA_orte_hnp_uri", *hnp_uri, uri.status().message());
  }
  // As JAX: ORTE job ids are multiples of 2^12; the port comes from the job family.
  PortChoice port{static_cast<uint16_t>(kDerivedPortBase + (uri->job_id >> 12) % 4096),
                  "OMPI_MCA_orte_hnp_uri"};
  std::string shown = Shown("OMPI_MCA_orte_hnp_uri", *hnp_uri);
  KDIST_RETURN_IF_ERROR(ApplyPortOverride(kName, env, port, &shown).status());
  Address coordinator = uri->addresses.front();
  coordinator.port = port.port;
  const std::string variables = port.variable == "OMPI_MCA_orte_hnp_uri"
                                    ? port.variable
                                    : "OMPI_MCA_orte_hnp_uri, " + port.variable;
  d.job_addresses = DetectedValue{coordinator.ToString(), variables, shown};
  return std::optional<Detection>(std::move(d));
}

}  // namespace

Detector OpenMpiDetector() {
  return {"ompi",
          "Open MPI's mpirun (coordinator on mpirun's host: 4 from OMPI_MCA_orte_hnp_uri, "
          "5 from PMIX_NAMESPACE)",
          "OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK or OMPI_MCA_orte_hnp_uri",
          {"OMPI_MCA_orte_hnp_uri", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
           "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_RANK",
           "PMIX_NAMESPACE", "PMIX_HOSTNAME", kEnvCoordinatorPort, kEnvJaxCoordinatorPort},
          &Detect};
}

}  // namespace kdist
