// The "ompi" detector: Open MPI's mpirun. Open MPI 4 publishes mpirun's
// address in OMPI_MCA_orte_hnp_uri (config/clusters/ompi_uri.h); Open MPI 4 and 5
// (PRRTE) set OMPI_COMM_WORLD_SIZE/RANK/LOCAL_RANK/LOCAL_SIZE and PMIX_RANK,
// and Open MPI 5 names mpirun's host and pid in PMIX_NAMESPACE.
#ifndef KDIST_CONFIG_CLUSTERS_OPEN_MPI_H_
#define KDIST_CONFIG_CLUSTERS_OPEN_MPI_H_

#include "config/clusters/detection.h"

namespace kdist {

// The detector's entry in the table of config/detectors.h: its name, what it reads
// and its detection function.
Detector OpenMpiDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_OPEN_MPI_H_
