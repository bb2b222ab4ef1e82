#include "config/local_devices.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

Detection WithLocal(std::optional<std::string> rank, std::optional<std::string> size) {
  Detection d;
  d.detector = "torchrun";
  if (rank) d.local_rank = DetectedValue{*rank, "LOCAL_RANK", "LOCAL_RANK=\"" + *rank + "\""};
  if (size) {
    d.local_size = DetectedValue{*size, "LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE=\"" + *size + "\""};
  }
  return d;
}

TEST(LocalDevices, OneDevicePerProcessByLocalRank) {
  auto s = SuggestLocalDevices(WithLocal("3", "4"), {});
  KDIST_ASSERT_OK(s);
  ASSERT_TRUE(s->ids.has_value());
  EXPECT_EQ(s->ids->size(), size_t{1});
  EXPECT_EQ(s->ids->front(), int64_t{3});
  EXPECT_EQ(s->source, std::string("torchrun (LOCAL_RANK)"));
  EXPECT_EQ(s->reason, std::string("one device per process, chosen by local rank "
                                         "(LOCAL_RANK=\"3\" of LOCAL_WORLD_SIZE=\"4\")"));
  EXPECT_TRUE(SuggestLocalDevices(WithLocal("0", std::nullopt), {})->ids.has_value());
}

TEST(LocalDevices, NoSuggestionWhenItWouldBeWrong) {
  auto none = SuggestLocalDevices(std::nullopt, {});
  EXPECT_FALSE(none->ids.has_value());
  EXPECT_EQ(none->reason, std::string("no scheduler was detected"));

  auto no_rank = SuggestLocalDevices(WithLocal(std::nullopt, std::nullopt), {});
  EXPECT_EQ(no_rank->reason, std::string("torchrun does not publish a local rank"));

  // One process per host drives every device of the host.
  auto alone = SuggestLocalDevices(WithLocal("0", "1"), {});
  EXPECT_FALSE(alone->ids.has_value());
  EXPECT_EQ(alone->reason,
                  std::string("this is the job's only process on its host "
                              "(LOCAL_WORLD_SIZE=\"1\"): it keeps every device it sees"));

  // The scheduler already bound a device: <local rank> would not exist.
  auto bound = SuggestLocalDevices(WithLocal("3", "4"), {{"CUDA_VISIBLE_DEVICES", "3"}});
  EXPECT_FALSE(bound->ids.has_value());
  EXPECT_EQ(bound->reason, std::string("CUDA_VISIBLE_DEVICES=\"3\" already limits the "
                                             "devices this process sees"));
  EXPECT_FALSE(
      SuggestLocalDevices(WithLocal("1", "2"), {{"ROCR_VISIBLE_DEVICES", "0,1"}})->ids.has_value());
}

TEST(LocalDevices, MalformedLocalValues) {
  KDIST_EXPECT_ERROR(SuggestLocalDevices(WithLocal("x", "4"), {}), StatusCode::kInvalidArgument,
                     "LOCAL_RANK=\"x\" (detected: torchrun): is not a local rank");
  KDIST_EXPECT_ERROR(SuggestLocalDevices(WithLocal("1", "0"), {}), StatusCode::kInvalidArgument,
                     "LOCAL_WORLD_SIZE=\"0\" (detected: torchrun): is not a number of processes");
  KDIST_EXPECT_ERROR(SuggestLocalDevices(WithLocal("4", "4"), {}), StatusCode::kInvalidArgument,
                     "LOCAL_RANK=\"4\" (detected: torchrun): is not below the number of "
                     "processes on this host, LOCAL_WORLD_SIZE=\"4\"");
}

TEST(LocalDevices, ParsesTheSetting) {
  EXPECT_TRUE(ParseLocalDeviceSetting("all")->kind == LocalDeviceSetting::Kind::kAll);
  EXPECT_TRUE(ParseLocalDeviceSetting(" Auto ")->kind == LocalDeviceSetting::Kind::kAuto);
  auto list = ParseLocalDeviceSetting("0, 2,5");
  KDIST_ASSERT_OK(list);
  EXPECT_TRUE(list->kind == LocalDeviceSetting::Kind::kList);
  EXPECT_EQ(list->ids.size(), size_t{3});
  EXPECT_EQ(list->ids[1], int64_t{2});
  KDIST_EXPECT_ERROR(ParseLocalDeviceSetting(""), StatusCode::kInvalidArgument, "is empty");
  KDIST_EXPECT_ERROR(ParseLocalDeviceSetting("0,,1"), StatusCode::kInvalidArgument,
                     "has \"\", which is not a device id");
  KDIST_EXPECT_ERROR(ParseLocalDeviceSetting("-1"), StatusCode::kInvalidArgument,
                     "has \"-1\", which is not a device id");
  KDIST_EXPECT_ERROR(ParseLocalDeviceSetting("some"), StatusCode::kInvalidArgument,
                     "expected \"all\", \"auto\" or comma-separated device ids");
  std::string many;
  for (int i = 0; i <= 4096; ++i) many += std::to_string(i) + ",";
  many.pop_back();
  KDIST_EXPECT_ERROR(ParseLocalDeviceSetting(many), StatusCode::kInvalidArgument,
                     "lists more than 4096 devices");
}

}  // namespace
}  // namespace kdist
