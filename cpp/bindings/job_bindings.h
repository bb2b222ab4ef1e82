// kdist._core's job wing: a failure as a structure (JobFailure) and the ledger of a
// job's attempts with its one restart rule (AttemptLedger), which `kdist launch -n`
// keeps itself and the nodes' rendezvous keeps for `--nodes`.
#ifndef KDIST_BINDINGS_JOB_BINDINGS_H_
#define KDIST_BINDINGS_JOB_BINDINGS_H_

#include <nanobind/nanobind.h>

namespace kdist::bindings {

// Binds FailureKind, JobFailure, AttemptRow, LedgerDecision and AttemptLedger into `m`.
void BindJob(nanobind::module_& m);

}  // namespace kdist::bindings

#endif  // KDIST_BINDINGS_JOB_BINDINGS_H_
