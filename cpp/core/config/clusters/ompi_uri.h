// Open MPI 4 (ORTE) publishes the address of `mpirun` (the "HNP") to every
// process it starts in OMPI_MCA_orte_hnp_uri:
//
//   1531576320.0;tcp://10.96.0.1,10.148.0.1:34911
//   1314521088.0;tcp6://[fe80::b9b:ac5d:9cf0:b858,2620:10d:c083:150e::3000:2]:43370
//   1531576320.0;tcp://10.0.0.1:34911;tcp6://[fe80::1]:34912
//
// that is "<job id>.<vpid>" then one or more ';'-separated contact URIs, each
// listing the interfaces of the mpirun host and the port its daemon listens
// on. Open MPI 5 (PRRTE) no longer sets this variable.
#ifndef KDIST_CONFIG_CLUSTERS_OMPI_URI_H_
#define KDIST_CONFIG_CLUSTERS_OMPI_URI_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "net/address.h"

namespace kdist {

struct OmpiHnpUri {
  uint64_t job_id = 0;  // the number before '.': ORTE's job family << 16 | local job
  uint64_t vpid = 0;    // the number after '.': 0 for mpirun itself
  // Every interface address of the mpirun host, in the order written (tcp://
  // entries as IPv4, tcp6:// as IPv6), each with its entry's port: the
  // daemon's own port, which the coordinator must not use.
  std::vector<Address> addresses;
};

// Parses the variable's value. URIs of other transports are skipped; at least
// one tcp:// or tcp6:// URI is required. Any byte sequence is safe to pass;
// failure is kInvalidArgument with a reason to be placed after the variable's
// name.
Result<OmpiHnpUri> ParseOmpiHnpUri(std::string_view text);

// Open MPI 5 (PRRTE) names each job's PMIx namespace after the mpirun that
// started it, and publishes it to every process in PMIX_NAMESPACE:
//
//   prterun-node01-8504@1
//
// that is "prterun-<mpirun's host name>-<mpirun's pid>@<job number>".
struct PrrteNamespace {
  std::string host;  // the host name as mpirun's host knows itself
  uint64_t pid = 0;
  uint64_t job = 0;
};

// Parses PMIX_NAMESPACE's value; kNotFound when it is not in mpirun's form
// (a namespace made by a persistent DVM or another PMIx server), which is not
// an error: the host is then unknown.
Result<PrrteNamespace> ParsePrrteNamespace(std::string_view text);

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_OMPI_URI_H_
