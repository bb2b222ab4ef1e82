// The "mpich" detector: MPICH, Intel MPI and MVAPICH mpiexec (Hydra) set
// PMI_SIZE, PMI_RANK, MPI_LOCALRANKID and MPI_LOCALNRANKS, and publish no
// coordinator address.
#ifndef KDIST_CONFIG_CLUSTERS_MPICH_H_
#define KDIST_CONFIG_CLUSTERS_MPICH_H_

#include "config/clusters/detection.h"

namespace kdist {

// The detector's entry in the table of config/detectors.h: its name, what it reads
// and its detection function.
Detector MpichDetector();

}  // namespace kdist

#endif  // KDIST_CONFIG_CLUSTERS_MPICH_H_
