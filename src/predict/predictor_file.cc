#include "predict/predictor_file.h"

#include <filesystem>
#include <system_error>

#include "predict/json_members.h"
#include "util/file.h"
#include "util/json_bounded.h"
#include "util/strings.h"

namespace footprint::predict {

using json = nlohmann::json;

std::string DefaultPredictor(const std::string& device, const std::vector<std::string>& folders,
                             Env& env) {
  if (auto p = env.Var("FOOTPRINT_PREDICTOR"); p && !p->empty()) return *p;
  const std::string file = "/" + Lower(device) + "-predictor.json";
  for (const std::string& folder : folders) {
    if (env.CheckReadable(folder + file).ok()) return folder + file;
  }
  return "";
}

Result<json> ReadJsonFile(const std::string& path, const std::string& what, Env& env) {
  // Its kind and size are the file system's, checked before it is read: a FIFO would block the
  // read, a device never end it.
  FP_RETURN_IF_ERROR(CheckRegularFile(path, what));
  std::error_code error;
  if (const auto size = std::filesystem::file_size(path, error);
      !error && size > kMaxPredictorBytes) {
    return InvalidArgument(what + " " + path + " is larger than " +
                           FormatBytes(static_cast<double>(kMaxPredictorBytes)) +
                           ", more than a predictor weighs: name a predictor file");
  }
  Result<std::string> text = env.ReadFile(path);
  if (!text.ok()) return NotFound("cannot read " + what + ": " + text.status().message());
  Result<json> j = ParseBoundedJson(*text);
  if (!j.ok()) return InvalidArgument(what + " " + path + ": " + j.status().message());
  if (!j->is_object()) return InvalidArgument(what + " " + path + " is not JSON");
  return std::move(j).value();
}

Result<json> ReadPredictor(const std::string& path, const std::string& device, Env& env) {
  FP_ASSIGN_OR_RETURN(json file, ReadJsonFile(path, "the predictor", env));
  if (const int version = static_cast<int>(Number(file, "version", 0));
      version < kOldestPredictorVersion || version > kPredictorVersion) {
    return InvalidArgument("the predictor " + path + " is of version " + std::to_string(version) +
                           ", this footprint reads version " + std::to_string(kPredictorVersion) +
                           " (and version 2, which records no machine): train it again "
                           "(footprint predict --train DATA --out FILE)");
  }
  const std::string trained_on = Text(file, "device", "cpu");
  if (Lower(trained_on) != Lower(device)) {
    return InvalidArgument("the predictor " + path + " was trained on " + trained_on + ", not " +
                           device + ": pass --predictor with one trained there " +
                           "(footprint predict --train)");
  }
  return file;
}

}  // namespace footprint::predict
