#include "config/clusters/mpich.h"

#include "config/detectors.h"

#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace ::kdist::testing;  // NOLINT: the shared environments and helpers

TEST(Mpich, MpichHydraAndIntelMpi) {
  Detection d = Detect("auto", Hydra());
  EXPECT_EQ(d.detector, std::string("mpich"));
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("mpiexec -genv KERAS_DISTRIBUTION_JOB_ADDRESSES") !=
                    std::string::npos);
  EXPECT_EQ(Text(d.num_processes), std::string("4"));
  EXPECT_EQ(Vars(d.process_id), std::string("PMI_RANK"));
  EXPECT_EQ(Text(d.local_rank), std::string("0"));
  EXPECT_EQ(Vars(d.local_size), std::string("MPI_LOCALNRANKS"));
  KDIST_EXPECT_ERROR(DetectCluster("auto", {{"MPI_LOCALRANKID", "0"}}),
                     StatusCode::kInvalidArgument,
                     "scheduler detection (mpich): MPI_LOCALRANKID=\"0\" is set but PMI_SIZE and "
                     "PMI_RANK are not.");
}

}  // namespace
}  // namespace kdist
