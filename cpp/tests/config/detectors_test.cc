#include "config/detectors.h"

#include <algorithm>

#include "base/text.h"
#include "config/clusters/scheduler_vars.h"  // the coordinator port overrides
#include "testing/random_text.h"
#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace ::kdist::testing;  // NOLINT: the shared environments and helpers

TEST(Detectors, TableOrderAndNames) {
  std::vector<std::string> names;
  for (const Detector& d : Detectors()) {
    names.emplace_back(d.name);
    EXPECT_FALSE(d.summary.empty());
    EXPECT_FALSE(d.presence.empty());
    EXPECT_FALSE(d.variables.empty());
  }
  EXPECT_EQ(Join(names, ","), std::string("torchrun,ompi,mpich,skypilot,slurm,tf_config,gke_tpu,gce_tpu,kubernetes"));
  EXPECT_TRUE(FindDetector("slurm") != nullptr);
  EXPECT_TRUE(FindDetector("auto") == nullptr);
}

TEST(Detectors, PortOverridesAreListedButDoNotMakeADetectorPresent) {
  for (const Detector& d : Detectors()) {
    const bool reads_override = d.name == "torchrun" || d.name == "ompi" ||
                                d.name == "slurm" || d.name == "kubernetes" ||
                                d.name == "skypilot" || d.name == "gke_tpu" ||
                                d.name == "gce_tpu";
    for (std::string_view name : {kEnvCoordinatorPort, kEnvJaxCoordinatorPort}) {
      const bool listed =
          std::find(d.variables.begin(), d.variables.end(), name) != d.variables.end();
      EXPECT_EQ(listed, reads_override);
    }
  }
  const Environment ports = {{"KDIST_COORDINATOR_PORT", "5000"},
                             {"JAX_COORDINATOR_PORT", "6000"}};
  EXPECT_EQ(Detect("auto", ports).detector, std::string("nothing"));
  for (const DetectorReport& report : DetectAll(ports)) {
    EXPECT_TRUE(report.status.ok() && !report.detection.has_value());
  }
}

TEST(Detectors, NothingInAnEmptyOrUnrelatedEnvironment) {
  EXPECT_EQ(Detect("auto", {}).detector, std::string("nothing"));
  EXPECT_EQ(Detect("auto", {{"HOME", "/root"}, {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                  {"HOSTNAME", "pod-1"}})
                      .detector,
                  std::string("nothing"));
  EXPECT_EQ(Detect("none", SlurmStep()).detector, std::string("nothing"));
}

TEST(Detectors, LaunchersInsideSlurmComeBeforeSlurm) {
  // `srun torchrun ...`: SLURM_PROCID numbers the torchrun agents.
  EXPECT_EQ(Detect("auto", Merged(SlurmStep(), Torchrun())).detector,
                  std::string("torchrun"));
  // mpirun in an allocation: Slurm started the ORTE daemons, not the ranks.
  EXPECT_EQ(Detect("auto", Merged(SlurmStep(), OpenMpi4())).detector,
                  std::string("ompi"));
  // Hydra with the Slurm bootstrap.
  EXPECT_EQ(Detect("auto", Merged(SlurmStep(), Hydra())).detector, std::string("mpich"));
  // srun --mpi=pmi2: Slurm's PMI plugin sets PMI_RANK and PMI_SIZE, no MPI_LOCALRANKID.
  Environment pmi2 = Merged(SlurmStep(), {{"PMI_RANK", "5"}, {"PMI_SIZE", "8"},
                                          {"PMI_FD", "7"}, {"PMI_JOBID", "4242424.0"}});
  EXPECT_EQ(Detect("auto", pmi2).detector, std::string("slurm"));
  // A detector asked by name ignores the others.
  EXPECT_EQ(Detect("slurm", Merged(SlurmStep(), Torchrun())).detector,
                  std::string("slurm"));
}

TEST(Detectors, NamedDetectorThatFindsNothing) {
  KDIST_EXPECT_ERROR(DetectCluster("slurm", Torchrun()), StatusCode::kNotFound,
                     "the slurm detector found none of its variables (SLURM_JOB_ID)");
}

TEST(Detectors, DetectAllReportsEveryDetector) {
  std::vector<DetectorReport> reports =
      DetectAll(Merged(Merged(SlurmStep(), Torchrun()), {{"TF_CONFIG", "{"}}));
  ASSERT_EQ(reports.size(), Detectors().size());
  EXPECT_EQ(reports[0].name, std::string("torchrun"));
  EXPECT_TRUE(reports[0].status.ok() && reports[0].detection.has_value());
  EXPECT_TRUE(reports[1].status.ok() && !reports[1].detection.has_value());
  EXPECT_TRUE(reports[4].detection.has_value());  // slurm
  EXPECT_FALSE(reports[5].status.ok());           // tf_config
  EXPECT_FALSE(reports[8].detection.has_value());  // kubernetes
}

// Any values in a scheduler's variables: a detection or an error, never a crash.
TEST(Detectors, SurviveArbitraryValues) {
  static constexpr char kAlphabet[] = "0123456789[],-()x.:;/{}\"\\ tcp";
  testing::RandomText random(0x94d049bb133111ebull, std::string_view(kAlphabet, sizeof kAlphabet - 1), 10);
  std::vector<std::string_view> names;
  for (const Detector& d : Detectors()) {
    for (std::string_view v : d.variables) names.push_back(v);
  }
  for (int round = 0; round < 5000; ++round) {
    Environment env;
    const size_t count = 1 + random.Bits() % 6;
    for (size_t i = 0; i < count; ++i) {
      std::string value = random.Next(16);
      env[std::string(names[random.Bits() % names.size()])] = std::move(value);
    }
    for (const DetectorReport& report : DetectAll(env)) {
      EXPECT_TRUE(report.status.ok() || report.status.code() == StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace kdist
