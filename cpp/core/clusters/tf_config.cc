#include "clusters/tf_config.h"

#include <utility>

#include "address.h"
#include "clusters/scheduler_vars.h"
#include "json.h"
#include "text.h"

namespace kdist {
namespace {

DetectResult Detect(const Environment& env) {
  constexpr std::string_view kName = "tf_config";
  const std::string* text = Lookup(env, "TF_CONFIG");
  if (text == nullptr) return std::optional<Detection>();
  const auto bad = [&](const std::string& reason) {
    return InvalidArgument(Prefix(kName) + "TF_CONFIG=" + Quote(*text) + " " + reason);
  };
  Result<JsonValue> json = ParseJson(*text);
  if (!json.ok()) return bad(json.status().message());
  if (!json->is_object()) {
    return bad(std::string("is ") + JsonKindName(json->kind()) +
               "; expected an object with \"cluster\" and \"task\"");
  }
  const JsonValue* cluster = json->Find("cluster");
  const JsonValue* task = json->Find("task");
  if (cluster == nullptr || !cluster->is_object()) {
    return bad("has no \"cluster\" object; expected {\"cluster\": {\"worker\": [\"host:port\", "
               "...]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  }
  if (task == nullptr || !task->is_object()) {
    return bad("has no \"task\" object; expected \"task\": {\"type\": \"worker\", \"index\": 0}");
  }

  // Processes: the chief (if any) first, then the workers, in list order.
  std::vector<std::string> addresses;
  size_t chiefs = 0, workers = 0;
  for (const std::string_view job : {std::string_view("chief"), std::string_view("worker")}) {
    const JsonValue* list = cluster->Find(job);
    if (list == nullptr) continue;
    if (!list->is_array()) {
      return bad("has cluster." + std::string(job) + " of type " + JsonKindName(list->kind()) +
                 "; expected a list of \"host:port\" strings");
    }
    for (size_t i = 0; i < list->items().size(); ++i) {
      const JsonValue& item = list->items()[i];
      const std::string where = "cluster." + std::string(job) + "[" + std::to_string(i) + "]";
      if (!item.is_string()) {
        return bad("has " + where + " of type " + JsonKindName(item.kind()) +
                   "; expected a \"host:port\" string");
      }
      Result<Address> address = ParseAddress(item.text());
      if (!address.ok()) return bad("has " + where + "=" + Quote(item.text()) + ", which " +
                                    address.status().message());
      addresses.push_back(address->ToString());
    }
    (job == "chief" ? chiefs : workers) = list->items().size();
  }
  for (const JsonValue::Member& member : cluster->members()) {
    if (member.first != "chief" && member.first != "worker") {
      return bad("has cluster." + member.first +
                 ": kdist runs the \"chief\" and \"worker\" tasks as one JAX job; parameter "
                 "servers, evaluators and other task types are not part of it");
    }
  }
  if (chiefs > 1) return bad("lists " + std::to_string(chiefs) + " chiefs; expected at most one");
  if (addresses.empty()) return bad("lists no \"chief\" or \"worker\" tasks");

  const JsonValue* type = task->Find("type");
  const JsonValue* index = task->Find("index");
  if (type == nullptr || !type->is_string() || (type->text() != "chief" && type->text() != "worker")) {
    return bad("has a task type that is not \"chief\" or \"worker\"; this process must be one of "
               "the job's tasks");
  }
  const std::optional<int64_t> i = index == nullptr ? std::nullopt : index->AsInteger();
  const size_t of_type = type->text() == "chief" ? chiefs : workers;
  if (!i || *i < 0 || static_cast<size_t>(*i) >= of_type) {
    return bad("has a task index that is not an integer in [0, " + std::to_string(of_type) +
               ") (the number of \"" + type->text() + "\" tasks in the cluster)");
  }
  const int64_t process_id = (type->text() == "worker" ? static_cast<int64_t>(chiefs) : 0) + *i;
  const std::string task_text = "{\"type\": \"" + type->text() + "\", \"index\": " +
                                std::to_string(*i) + "}";

  Detection d;
  d.detector = std::string(kName);
  d.job_addresses = DetectedValue{Join(addresses, ","), "TF_CONFIG cluster",
                                  "TF_CONFIG cluster " + Quote(Join(addresses, ","))};
  d.num_processes = DetectedValue{std::to_string(addresses.size()), "TF_CONFIG cluster",
                                  "TF_CONFIG cluster (" + std::to_string(chiefs) + " chief, " +
                                      std::to_string(workers) + " workers)"};
  d.process_id = DetectedValue{std::to_string(process_id), "TF_CONFIG task",
                               "TF_CONFIG task " + task_text};
  return std::optional<Detection>(std::move(d));
}

}  // namespace

Detector TfConfigDetector() {
  return {"tf_config", "TensorFlow's TF_CONFIG (chief and worker tasks)", "TF_CONFIG",
          {"TF_CONFIG"},
          &Detect};
}

}  // namespace kdist
