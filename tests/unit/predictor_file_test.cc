// Predictor files (src/predict/predictor_file.h): which one a prediction reads when none is
// named, and what a file missing, unreadable or cut short makes it say, from the Env's files.
#include "predict/predictor_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "fake_env.h"

namespace footprint::predict {
namespace {

class PredictorFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = (std::filesystem::temp_directory_path() / "fp-predictor-XXXXXX").string();
    ASSERT_NE(::mkdtemp(name.data()), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A predictor file of this version for `device` in `folder`, made if need be; its path.
  std::string WritePredictor(const std::string& folder, const std::string& device) {
    std::filesystem::create_directories(folder);
    const std::string path = folder + "/" + device + "-predictor.json";
    std::ofstream(path) << R"({"version": 3, "device": ")" << device << R"(", "latency": {}})";
    return path;
  }

  std::string dir_;
  FakeEnv env_;
};

TEST_F(PredictorFile, TheDefaultIsTheFirstFolderWhoseFileCanBeRead) {
  const std::string installed = dir_ + "/installed", source = dir_ + "/source";
  EXPECT_EQ(DefaultPredictor("cpu", {installed, source}, env_), "");
  const std::string shipped = WritePredictor(source, "cpu");
  EXPECT_EQ(DefaultPredictor("CPU", {installed, source}, env_), shipped);
  const std::string mine = WritePredictor(installed, "cpu");
  EXPECT_EQ(DefaultPredictor("cpu", {installed, source}, env_), mine);
  env_.file_errors[mine] = EACCES;
  EXPECT_EQ(DefaultPredictor("cpu", {installed, source}, env_), shipped);
  env_.vars["FOOTPRINT_PREDICTOR"] = "/elsewhere.json";
  EXPECT_EQ(DefaultPredictor("cpu", {installed, source}, env_), "/elsewhere.json");
}

TEST_F(PredictorFile, MissingUnreadableAndCutShortFilesAreOneLineEach) {
  const std::string path = WritePredictor(dir_, "cpu");
  auto read = ReadPredictor(path, "cpu", env_);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->value("version", 0), 3);

  env_.Truncate(path, 20);
  read = ReadPredictor(path, "cpu", env_);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(read.status().message(), "the predictor " + path + " is not JSON");

  env_.file_errors[path] = EACCES;
  read = ReadPredictor(path, "cpu", env_);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(read.status().message(),
            "cannot read the predictor: cannot open " + path + ": Permission denied");

  const std::string missing = dir_ + "/none-predictor.json";
  read = ReadPredictor(missing, "cpu", env_);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(read.status().message(),
            "cannot read the predictor " + missing + ": No such file or directory");
}

}  // namespace
}  // namespace footprint::predict
