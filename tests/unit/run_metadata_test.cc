// What a run is called when nobody names it: the program, or the script an interpreter runs.
#include "run/run_metadata.h"

#include <gtest/gtest.h>

namespace footprint {
namespace {

TEST(DefaultRunName, TheProgramOrTheScriptAnInterpreterRuns) {
  EXPECT_EQ(DefaultRunName({"/usr/bin/make", "-j2"}), "make");
  EXPECT_EQ(DefaultRunName({"./bench", "train.py"}), "bench");  // not an interpreter
  EXPECT_EQ(DefaultRunName({"python3", "train.py", "--epochs", "3"}), "train.py");
  EXPECT_EQ(DefaultRunName({"/usr/bin/python3.11", "-u", "-W", "ignore", "src/train.py"}),
            "train.py");
  EXPECT_EQ(DefaultRunName({"python3", "-X", "dev", "-m", "pkg.train", "--lr", "1"}), "pkg.train");
  EXPECT_EQ(DefaultRunName({"python3", "-c", "print(1)"}), "python3");
  EXPECT_EQ(DefaultRunName({"python3"}), "python3");
  EXPECT_EQ(DefaultRunName({"bash", "-e", "scripts/run.sh"}), "run.sh");  // errexit
  EXPECT_EQ(DefaultRunName({"sh", "-c", "make && make test"}), "sh");
  EXPECT_EQ(DefaultRunName({"node", "app.js"}), "app.js");
  EXPECT_EQ(DefaultRunName({"node", "-e", "1+1"}), "node");  // inline code
  EXPECT_EQ(DefaultRunName({"Rscript", "fit.R"}), "fit.R");
  EXPECT_EQ(DefaultRunName({"pythonic", "x.py"}), "pythonic");  // only whole names match
  EXPECT_EQ(DefaultRunName({}), "program");
}

}  // namespace
}  // namespace footprint
