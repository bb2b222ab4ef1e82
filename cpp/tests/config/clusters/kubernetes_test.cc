#include "config/clusters/kubernetes.h"

#include "config/detectors.h"

#include "base/text.h"
#include "testing/scheduler_environments.h"
#include "testing/status_matchers.h"

namespace kdist {
namespace {

using namespace ::kdist::testing;  // NOLINT: the shared environments and helpers

TEST(Kubernetes, KubernetesIndexedJob) {
  Detection d = Detect("auto", KubernetesIndexedJob());
  EXPECT_EQ(d.detector, std::string("kubernetes"));
  EXPECT_EQ(Text(d.process_id), std::string("2"));
  EXPECT_EQ(Vars(d.process_id), std::string("JOB_COMPLETION_INDEX"));
  EXPECT_EQ(Text(d.job_addresses), std::string("train-0.train-svc:55527"));
  EXPECT_EQ(Vars(d.job_addresses),
                  std::string("HOSTNAME, JOB_COMPLETION_INDEX, KDIST_K8S_SUBDOMAIN"));
  EXPECT_FALSE(d.num_processes.has_value());
  EXPECT_TRUE(d.num_processes_hint.find("spec.completions") != std::string::npos);
  // Pod k is <job name>-k: the hosts of every process, once the count is known.
  EXPECT_EQ(d.process_host_prefix, std::string("train-"));
  EXPECT_TRUE(d.process_host_runs.empty());

  // A JobSet's single Job: pods <jobset>-<replicated job>-<job index>-<pod index>.
  Environment jobset = {{"JOB_COMPLETION_INDEX", "3"}, {"HOSTNAME", "js-workers-0-3"},
                        {"KDIST_K8S_SUBDOMAIN", "js"}, {"KDIST_COORDINATOR_PORT", "1234"}};
  d = Detect("auto", jobset);
  EXPECT_EQ(Text(d.job_addresses), std::string("js-workers-0-0.js:1234"));
  EXPECT_EQ(Vars(d.job_addresses),
                  std::string("HOSTNAME, JOB_COMPLETION_INDEX, KDIST_K8S_SUBDOMAIN, "
                              "KDIST_COORDINATOR_PORT"));
}

TEST(Kubernetes, KubernetesSaysWhatItCannotKnow) {
  Environment env = KubernetesIndexedJob();
  env.erase("KDIST_K8S_SUBDOMAIN");
  Detection d = Detect("auto", env);
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("set KDIST_K8S_SUBDOMAIN") != std::string::npos);
  EXPECT_TRUE(d.job_addresses_hint.find("train-0.<subdomain>:55527") != std::string::npos);
  env["HOSTNAME"] = "custom-host";
  d = Detect("auto", env);
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("HOSTNAME=\"custom-host\" is not <job name>-2") !=
                    std::string::npos);
  env["JOB_COMPLETION_INDEX"] = "two";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (kubernetes): JOB_COMPLETION_INDEX=\"two\" is not a "
                     "completion index (has \"t\" at index 0 where a digit was expected); "
                     "expected a non-negative integer");
  env["JOB_COMPLETION_INDEX"] = "2 ";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "JOB_COMPLETION_INDEX=\"2 \" is not a completion index (has \" \" at index 1");
  env = KubernetesIndexedJob();
  env["KDIST_K8S_SUBDOMAIN"] = "bad_svc";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "scheduler detection (kubernetes): HOSTNAME=\"train-2\" and "
                     "KDIST_K8S_SUBDOMAIN=\"bad_svc\" give the coordinator "
                     "\"train-0.bad_svc\", which is not a valid host name (dot-separated labels");
}

// A JobSet of 2 jobs x 3 pods: pod 1 of job 1 (completion index 1) is process 4.
Environment JobSetPod() {
  return {{"JOB_COMPLETION_INDEX", "1"},
          {"HOSTNAME", "js-slice-1-1"},
          {"KDIST_K8S_SUBDOMAIN", "js"},
          {"KDIST_K8S_JOB_GLOBAL_INDEX", "1"},
          {"KDIST_K8S_JOB_COMPLETIONS", "3"},
          {"KDIST_K8S_GLOBAL_REPLICAS", "2"}};
}

TEST(Kubernetes, KubernetesJobSetGlobalIdFromJobIndexAndCompletionIndex) {
  Detection d = Detect("auto", JobSetPod());
  EXPECT_EQ(d.detector, std::string("kubernetes"));
  EXPECT_EQ(Text(d.process_id), std::string("4"));
  EXPECT_EQ(Vars(d.process_id),
                  std::string("KDIST_K8S_JOB_GLOBAL_INDEX, KDIST_K8S_JOB_COMPLETIONS, "
                              "JOB_COMPLETION_INDEX"));
  EXPECT_EQ(Text(d.num_processes), std::string("6"));
  EXPECT_EQ(Vars(d.num_processes),
                  std::string("KDIST_K8S_GLOBAL_REPLICAS, KDIST_K8S_JOB_COMPLETIONS"));
  // Pod 0 of this job is not the job's coordinator: nothing is derived from the host name.
  EXPECT_FALSE(d.job_addresses.has_value());
  EXPECT_TRUE(d.job_addresses_hint.find("<jobset>-<first replicated job>-0-0") !=
                    std::string::npos);

  // Every pod of the JobSet gets a distinct id in [0, 6).
  std::vector<std::string> ids;
  for (int job = 0; job < 2; ++job) {
    for (int pod = 0; pod < 3; ++pod) {
      Environment env = JobSetPod();
      env["KDIST_K8S_JOB_GLOBAL_INDEX"] = std::to_string(job);
      env["JOB_COMPLETION_INDEX"] = std::to_string(pod);
      ids.push_back(Text(Detect("auto", env).process_id));
    }
  }
  EXPECT_EQ(Join(ids, ","), std::string("0,1,2,3,4,5"));
}

TEST(Kubernetes, KubernetesJobSetWithoutTheNumberOfJobsSaysWhatToSet) {
  Environment env = JobSetPod();
  env.erase("KDIST_K8S_GLOBAL_REPLICAS");
  Detection d = Detect("auto", env);
  EXPECT_EQ(Text(d.process_id), std::string("4"));
  EXPECT_FALSE(d.num_processes.has_value());
  EXPECT_TRUE(d.num_processes_hint.find("jobset.sigs.k8s.io/global-replicas") !=
                    std::string::npos);
}

TEST(Kubernetes, KubernetesJobSetPartialOrMalformed) {
  Environment env = JobSetPod();
  env.erase("KDIST_K8S_JOB_COMPLETIONS");
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_COMPLETIONS is not");
  env = JobSetPod();
  env["JOB_COMPLETION_INDEX"] = "3";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "JOB_COMPLETION_INDEX=\"3\" is not below KDIST_K8S_JOB_COMPLETIONS=\"3\"");
  env = JobSetPod();
  env["KDIST_K8S_JOB_GLOBAL_INDEX"] = "2";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_GLOBAL_INDEX=\"2\" is not below KDIST_K8S_GLOBAL_REPLICAS=\"2\"");
  env = JobSetPod();
  env["KDIST_K8S_JOB_COMPLETIONS"] = "0";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_COMPLETIONS=\"0\" is not a number of pods per job");
  env = JobSetPod();
  env["KDIST_K8S_JOB_GLOBAL_INDEX"] = "x";
  KDIST_EXPECT_ERROR(DetectCluster("auto", env), StatusCode::kInvalidArgument,
                     "KDIST_K8S_JOB_GLOBAL_INDEX=\"x\" is not a job index");
}

}  // namespace
}  // namespace kdist
