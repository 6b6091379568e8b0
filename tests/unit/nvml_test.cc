// The NVML binding and the GPU inventory against the fake libnvidia-ml.so.1 variants.
#include "probe/nvml.h"

#include <gtest/gtest.h>

#include "fake_env.h"
#include "fake_nvml.h"
#include "probe/gpu_devices.h"

namespace footprint {
namespace {

using testing::FakeNvmlPath;
using testing::FakeNvmlScript;

constexpr char kTwoGpus[] = R"(
driver 550.54.15
nvml 12.550.54.15
gpu name="NVIDIA H100 80GB HBM3" uuid=GPU-11111111-2222-3333-4444-555555555555 memory_total=85899345920
gpu name="NVIDIA A100-SXM4-40GB" uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee mig=1
mig gpu=1 name="NVIDIA A100-SXM4-40GB MIG 3g.20gb" uuid=MIG-99999999-0000-1111-2222-333333333333 gi=1 ci=0 unsupported=util,power,energy,putil
mig gpu=1 name="NVIDIA A100-SXM4-40GB MIG 3g.20gb" uuid=MIG-88888888-0000-1111-2222-333333333333 gi=2 ci=0 unsupported=util,power,energy,putil
process gpu=0 kind=compute pid=4242 memory=1048576
process gpu=0 kind=compute pid=1 memory=na
process gpu=0 kind=graphics pid=7 memory=4096
)";

TEST(NvmlStrideTest, FollowsTheSymbolVersionAndThe535Exception) {
  EXPECT_EQ(nvml::ProcessInfoStride(1, "550.54.15"), 16u);
  EXPECT_EQ(nvml::ProcessInfoStride(2, "535.54.03"), 24u);
  EXPECT_EQ(nvml::ProcessInfoStride(3, "550.54.15"), 24u);
  EXPECT_EQ(nvml::ProcessInfoStride(3, "535.43.02"), 32u);
  EXPECT_EQ(nvml::ProcessInfoStride(3, "535.86.05"), 32u);
  EXPECT_EQ(nvml::ProcessInfoStride(3, "535.98"), 24u);
  EXPECT_EQ(nvml::ProcessInfoStride(3, "530.30.02"), 24u);
  EXPECT_EQ(nvml::ProcessInfoStride(3, ""), 24u);
}

TEST(NvmlTest, ReturnNamesAreNvmlsOwn) {
  EXPECT_EQ(nvml::ReturnName(3), "NVML_ERROR_NOT_SUPPORTED");
  EXPECT_EQ(nvml::ReturnName(15), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(nvml::ReturnName(4711), "NVML_ERROR_4711");
  EXPECT_TRUE(nvml::IsDeviceLost(nvml::kGpuIsLost));
  EXPECT_FALSE(nvml::IsDeviceLost(nvml::kNotSupported));
}

TEST(NvmlTest, MissingLibrarySaysWhichFileAndWhy) {
  auto lib = nvml::Library::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(lib.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << lib.status().message();
}

TEST(NvmlTest, TheEnvChoosesTheLibraryFile) {
  FakeEnv env;
  env.libraries["libnvidia-ml.so.1"] = FakeNvmlPath("full");
  FakeNvmlScript script(kTwoGpus);
  auto lib = nvml::Library::Open(env);
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  EXPECT_EQ((*lib)->path(), FakeNvmlPath("full"));
}

TEST(NvmlTest, TheDefaultEnvHonoursTheOverrideVariable) {
  ::setenv("FOOTPRINT_NVML_LIBRARY", "/x/libnvidia-ml.so.1", 1);
  std::string error, path;
  EXPECT_EQ(Env::Default().OpenLibrary("libnvidia-ml.so.1", &error, &path), nullptr);
  EXPECT_EQ(path, "/x/libnvidia-ml.so.1");
  EXPECT_NE(error.find("/x/libnvidia-ml.so.1"), std::string::npos) << error;
  ::unsetenv("FOOTPRINT_NVML_LIBRARY");
  Env::Default().OpenLibrary("libnvidia-ml.so.1", &error, &path);
  EXPECT_EQ(path, "libnvidia-ml.so.1");
}

TEST(NvmlTest, MissingRequiredSymbolMakesNvmlUnusable) {
  FakeNvmlScript script(kTwoGpus);
  auto lib = nvml::Library::Open(FakeNvmlPath("broken"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("nvmlDeviceGetCount_v2 or nvmlDeviceGetCount"),
            std::string::npos)
      << lib.status().message();
}

TEST(NvmlTest, InitFailureNamesTheCodeAndWhatToDo) {
  FakeNvmlScript script("init_error 9\n");
  auto lib = nvml::Library::Open(FakeNvmlPath("full"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED"),
            std::string::npos)
      << lib.status().message();
  EXPECT_NE(lib.status().message().find("kernel driver is not loaded"), std::string::npos);
}

TEST(NvmlTest, VersionedSymbolsComeFirst) {
  FakeNvmlScript script(kTwoGpus);
  auto lib = nvml::Library::Open(FakeNvmlPath("full"));
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  nvml::Library& l = **lib;
  EXPECT_EQ(l.SymbolOf(nvml::Library::kInit), "nvmlInit_v2");
  EXPECT_EQ(l.SymbolOf(nvml::Library::kDeviceGetCount), "nvmlDeviceGetCount_v2");
  EXPECT_EQ(l.SymbolOf(nvml::Library::kDeviceGetComputeRunningProcesses),
            "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_TRUE(l.MissingOptional().empty());
  EXPECT_EQ(l.DriverVersion(), "550.54.15");
  EXPECT_EQ(l.NvmlVersion(), "12.550.54.15");
  unsigned int count = 0;
  ASSERT_EQ(l.DeviceCount(&count), nvml::kSuccess);
  EXPECT_EQ(count, 2u);
  nvml::Device dev;
  ASSERT_EQ(l.DeviceByIndex(0, &dev), nvml::kSuccess);
  std::string name;
  ASSERT_EQ(l.Name(dev, &name), nvml::kSuccess);
  EXPECT_EQ(name, "NVIDIA H100 80GB HBM3");
  std::vector<nvml::ProcessMemory> procs;
  ASSERT_EQ(l.ComputeProcesses(dev, procs), nvml::kSuccess);
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs[0].pid, 4242u);
  EXPECT_EQ(procs[0].used_bytes, 1048576u);
  EXPECT_EQ(procs[1].pid, 1u);
  EXPECT_EQ(procs[1].used_bytes, nvml::kValueNotAvailable);
  ASSERT_EQ(l.GraphicsProcesses(dev, procs), nvml::kSuccess);
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0].pid, 7u);
}

TEST(NvmlTest, OldDriverFallsBackToUnversionedSymbolsAndTheV1Struct) {
  FakeNvmlScript script(kTwoGpus);
  auto lib = nvml::Library::Open(FakeNvmlPath("minimal"));
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  nvml::Library& l = **lib;
  EXPECT_EQ(l.SymbolOf(nvml::Library::kInit), "nvmlInit");
  EXPECT_EQ(l.SymbolOf(nvml::Library::kDeviceGetComputeRunningProcesses),
            "nvmlDeviceGetComputeRunningProcesses");
  std::vector<std::string> missing = l.MissingOptional();
  EXPECT_NE(std::find(missing.begin(), missing.end(), "nvmlDeviceGetTotalEnergyConsumption"),
            missing.end());
  EXPECT_NE(std::find(missing.begin(), missing.end(), "nvmlDeviceGetProcessUtilization"),
            missing.end());
  nvml::Device dev;
  ASSERT_EQ(l.DeviceByIndex(0, &dev), nvml::kSuccess);
  unsigned long long mj = 0;
  EXPECT_EQ(l.TotalEnergy(dev, &mj), nvml::kFunctionNotFound);
  EXPECT_NE(l.Describe(nvml::kFunctionNotFound, nvml::Library::kDeviceGetTotalEnergyConsumption)
                .find("nvmlDeviceGetTotalEnergyConsumption is not exported"),
            std::string::npos);
  // 16-byte elements decoded as such: the second process is right, not shifted.
  std::vector<nvml::ProcessMemory> procs;
  ASSERT_EQ(l.ComputeProcesses(dev, procs), nvml::kSuccess);
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs[1].pid, 1u);
  EXPECT_EQ(procs[0].used_bytes, 1048576u);
}

TEST(NvmlTest, ProcessListsGrowBeyondTheFirstBuffer) {
  std::string text = "gpu name=big uuid=GPU-big\n";
  for (int pid = 100; pid < 164; ++pid) {  // more than fit in the first buffer of 64 * 32 bytes
    text += "process gpu=0 kind=compute pid=" + std::to_string(pid) +
            " memory=" + std::to_string(pid) + "\n";
  }
  FakeNvmlScript script(text);
  auto lib = nvml::Library::Open(FakeNvmlPath("full"));
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  nvml::Device dev;
  ASSERT_EQ((*lib)->DeviceByIndex(0, &dev), nvml::kSuccess);
  std::vector<nvml::ProcessMemory> procs;
  ASSERT_EQ((*lib)->ComputeProcesses(dev, procs), nvml::kSuccess);
  ASSERT_EQ(procs.size(), 64u);
  EXPECT_EQ(procs[63].pid, 163u);
  EXPECT_EQ(procs[63].used_bytes, 163u);
}

TEST(GpuInventoryTest, ListsGpusAndMigDevices) {
  FakeNvmlScript script(kTwoGpus);
  auto lib = nvml::Library::Open(FakeNvmlPath("full"));
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  auto gpus = ListGpus(**lib);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(gpus->size(), 4u);
  EXPECT_EQ((*gpus)[0].entity, "gpu:0");
  EXPECT_EQ((*gpus)[0].mig_mode, "disabled");
  EXPECT_EQ((*gpus)[0].memory_total_bytes, 85899345920ull);
  EXPECT_EQ((*gpus)[1].entity, "gpu:1");
  EXPECT_EQ((*gpus)[1].mig_mode, "enabled");
  EXPECT_EQ((*gpus)[2].entity, "gpu:1/mig:0");
  EXPECT_EQ((*gpus)[2].parent, 1);
  EXPECT_EQ((*gpus)[2].gpu_instance_id, 1u);
  EXPECT_EQ((*gpus)[3].entity, "gpu:1/mig:1");
  EXPECT_EQ((*gpus)[3].uuid, "MIG-88888888-0000-1111-2222-333333333333");

  // MIG devices: utilisation is not supported, and that is said, not measured as 0.
  GpuCapabilities mig = ProbeGpuCapabilities(**lib, (*gpus)[2], true);
  const GpuSupport& util = mig[static_cast<size_t>(GpuMetricSlot(MetricId::kGpu))];
  EXPECT_FALSE(util.ok);
  EXPECT_NE(util.why.find("NVML_ERROR_NOT_SUPPORTED"), std::string::npos) << util.why;
  EXPECT_FALSE(mig[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuEnergy))].ok);
  EXPECT_TRUE(mig[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuMemory))].ok);
  GpuCapabilities whole = ProbeGpuCapabilities(**lib, (*gpus)[0], true);
  for (size_t k = 0; k < kFirstGpuActivitySlot; ++k) EXPECT_TRUE(whole[k].ok) << whole[k].why;
  EXPECT_EQ(whole[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuEnergy))].how, "counter");
  GpuCapabilities no_tree = ProbeGpuCapabilities(**lib, (*gpus)[0], false);
  EXPECT_FALSE(no_tree[static_cast<size_t>(GpuMetricSlot(MetricId::kGpuMemoryTree))].ok);
}

// A synthetic inventory: GPU 0, GPU 1 with two MIG devices, GPU 2.
std::vector<GpuEntity> Inventory() {
  auto dev = reinterpret_cast<nvml::Device>(0x1);  // never dereferenced
  std::vector<GpuEntity> inv(5);
  inv[0] = {dev, "gpu:0", 0, -1, -1, "A", "GPU-0aaa-1111"};
  inv[1] = {dev, "gpu:1", 1, -1, -1, "B", "GPU-1bbb-2222"};
  inv[2] = {dev, "gpu:1/mig:0", 1, 0, 1, "B MIG", "MIG-5ccc-3333"};
  inv[2].gpu_instance_id = 3;
  inv[2].compute_instance_id = 0;
  inv[3] = {dev, "gpu:1/mig:1", 1, 1, 1, "B MIG", "MIG-6ddd-4444"};
  inv[3].gpu_instance_id = 5;
  inv[3].compute_instance_id = 0;
  inv[4] = {dev, "gpu:2", 2, -1, -1, "C", "GPU-2eee-5555"};
  return inv;
}

std::vector<std::string> Selected(const std::optional<std::string>& list,
                                  std::string* ignored = nullptr) {
  std::vector<GpuEntity> inv = Inventory();
  GpuSelection sel = SelectGpus(inv, list);
  if (ignored != nullptr) *ignored = sel.ignored;
  std::vector<std::string> out;
  for (size_t i : sel.entities) out.push_back(inv[i].entity);
  return out;
}

TEST(GpuSelectionTest, FollowsCudaVisibleDevices) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Selected(std::nullopt).size(), 5u);
  EXPECT_EQ(Selected("all").size(), 5u);
  EXPECT_EQ(Selected(""), V{});
  EXPECT_EQ(Selected("2"), V{"gpu:2"});
  EXPECT_EQ(Selected("2, 0"), (V{"gpu:0", "gpu:2"}));
  EXPECT_EQ(Selected("1"), (V{"gpu:1", "gpu:1/mig:0", "gpu:1/mig:1"}));
  EXPECT_EQ(Selected("GPU-2eee-5555"), V{"gpu:2"});
  EXPECT_EQ(Selected("GPU-2eee"), V{"gpu:2"});  // a unique prefix
  EXPECT_EQ(Selected("gpu-2EEE"), V{"gpu:2"});  // case does not matter
  EXPECT_EQ(Selected("MIG-6ddd-4444"), (V{"gpu:1", "gpu:1/mig:1"}));
  EXPECT_EQ(Selected("MIG-GPU-1bbb-2222/3/0"), (V{"gpu:1", "gpu:1/mig:0"}));
  std::string ignored;
  EXPECT_EQ(Selected("0,7,2", &ignored), V{"gpu:0"});  // CUDA stops at the first bad entry
  EXPECT_NE(ignored.find("'7'"), std::string::npos) << ignored;
  EXPECT_EQ(Selected("GPU-", &ignored), V{});  // ambiguous prefix names nothing
  EXPECT_FALSE(ignored.empty());
}

}  // namespace
}  // namespace footprint
