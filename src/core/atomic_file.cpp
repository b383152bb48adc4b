#include "lemon/core/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

namespace lemon {

namespace fs = std::filesystem;

Status write_file_atomically(const fs::path& path, std::string_view text) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return Error(ErrorCode::kInternal,
                 "cannot create " + path.parent_path().string() + ": " + ec.message());
  }
  // A hidden name unique to this process and call.
  fs::path tmp =
      path.parent_path() / ("." + path.filename().string() + ".tmp" + std::to_string(::getpid()) +
                            "-" + std::to_string(++counter));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      fs::remove(tmp, ec);
      return Error(ErrorCode::kInternal, "cannot write " + tmp.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Error(ErrorCode::kInternal, "cannot replace " + path.string() + ": " + ec.message());
  }
  return ok_status();
}

Result<nlohmann::ordered_json> read_json_object_for_update(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return nlohmann::ordered_json::object();
  }
  std::ifstream in(path);
  if (!in) {
    return Error(ErrorCode::kInternal, "cannot read " + path.string());
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find_first_not_of(" \t\r\n") == std::string::npos) {
    return nlohmann::ordered_json::object();
  }
  auto j = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    return j;
  }
  return Error(ErrorCode::kInternal,
               path.string() + " is not a JSON object; fix or remove it before changing it");
}

}  // namespace lemon
