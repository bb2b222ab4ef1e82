#include "device_cache.h"

#include "testing/status_matchers.h"

namespace kdist {
namespace {

TEST(DeviceCache, StoresPerDeviceType) {
  DeviceCache cache;
  EXPECT_FALSE(cache.Get("").has_value());
  EXPECT_TRUE(cache.Put("", cache.generation(), {"cpu:0", "cpu:1"}));
  EXPECT_TRUE(cache.Put("gpu", cache.generation(), {"gpu:0"}));
  ASSERT_TRUE(cache.Get("").has_value());
  EXPECT_EQ(cache.Get("")->size(), size_t{2});
  EXPECT_EQ(cache.Get("gpu")->front(), std::string("gpu:0"));
  EXPECT_FALSE(cache.Get("tpu").has_value());
  EXPECT_EQ(*cache.Count(""), size_t{2});
  EXPECT_FALSE(cache.Count("tpu").has_value());
}

TEST(DeviceCache, InvalidateForgetsEverything) {
  DeviceCache cache;
  EXPECT_TRUE(cache.Put("", cache.generation(), {"cpu:0"}));
  cache.Invalidate();
  EXPECT_FALSE(cache.Get("").has_value());
}

TEST(DeviceCache, ListComputedAcrossAnInvalidateIsNotStored) {
  DeviceCache cache;
  const uint64_t before = cache.generation();
  cache.Invalidate();  // initialize() ran while the caller asked the backend
  EXPECT_FALSE(cache.Put("", before, {"cpu:0"}));
  EXPECT_FALSE(cache.Get("").has_value());
}

TEST(DeviceCache, ReturnsCopies) {
  DeviceCache cache;
  EXPECT_TRUE(cache.Put("", cache.generation(), {"cpu:0"}));
  auto copy = cache.Get("");
  copy->push_back("cpu:99");
  EXPECT_EQ(cache.Get("")->size(), size_t{1});
}

}  // namespace
}  // namespace kdist
