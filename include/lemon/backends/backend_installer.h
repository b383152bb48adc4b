// BackendInstaller: installs, reports and removes backend releases in
// <cache>/bin/<recipe>/<backend>/, on the download layer.
//
// - install() starts or joins the install of recipe:backend (two installs
//   share one download). The task: LEMONADE_<RECIPE>_<BACKEND>_BIN pointing
//   at an executable, or an install at the pinned version, is a no-op;
//   offline it fails (kOffline, naming the install command); otherwise it
//   downloads the release (resumable), unpacks it with libarchive into a
//   hidden staging folder beside the target, checks that the executable
//   runs (`--version` exits 0 within 10 s, with its own folder as
//   LD_LIBRARY_PATH), writes version.txt, and swaps the staging folder with
//   the old install in one renameat2(RENAME_EXCHANGE) (or rename when there
//   is none). A crash at any point leaves the old install or the new one.
// - uninstall() moves the folder aside, then removes it (OK when nothing is
//   installed, as in Lemonade). Callers unload the models using it first.
// - state() reports installed / installable / update_required / unsupported.
//
// Ownership: owns its task threads (joined on destruction).
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/backends/backend_release.h"
#include "lemon/core/error.h"
#include "lemon/download/shared_task.h"
#include "lemon/download/transfer.h"

namespace lemon {

struct InstallerSettings {
  std::string cache_dir;      // <cache>/bin/... is where installs go
  std::string resources_dir;  // the built-in backend_versions.json
  std::string releases_base = "https://github.com";
  std::string rocm_arch;  // gfx target of the AMD GPU, "" when none
  bool offline = false;
  download::TransferOptions transfer;
};

struct BackendState {
  enum class Kind { kInstalled, kInstallable, kUpdateRequired, kUnsupported };
  Kind kind = Kind::kUnsupported;
  std::string version;         // installed version ("" when not installed)
  std::string pinned_version;  // what an install would put there
  std::string release_url;     // "" when unsupported
  std::string executable;      // the installed (or env-given) executable, or ""
  std::string message;         // why, for unsupported and not installed
};
const char* backend_state_name(BackendState::Kind kind);  // "installed", ...

class BackendInstaller {
 public:
  explicit BackendInstaller(InstallerSettings settings);
  ~BackendInstaller();
  BackendInstaller(const BackendInstaller&) = delete;
  BackendInstaller& operator=(const BackendInstaller&) = delete;

  // Starts or joins the install. kInvalidRequest (param recipe/backend) for
  // unknown names; kUnsupportedOperation when there is no Linux release.
  Result<download::SharedTasks::Follower> install(std::string_view recipe,
                                                  std::string_view backend);
  Status wait(download::SharedTasks::Follower& f, download::FollowHooks hooks) const;
  // install() + wait() unless the backend is installed already.
  Status ensure_installed(std::string_view recipe, std::string_view backend,
                          download::FollowHooks hooks);

  Status uninstall(std::string_view recipe, std::string_view backend);
  BackendState state(std::string_view recipe, std::string_view backend) const;
  bool installing(std::string_view recipe, std::string_view backend) const;

  // Cancels installs (a staging folder may stay; it is removed next time).
  void shutdown();

 private:
  Result<BackendRelease> release(std::string_view recipe, std::string_view backend) const;
  Status run_install(const BackendRelease& release, download::TaskContext& ctx);

  const InstallerSettings settings_;
  std::atomic<bool> shutting_down_{false};
  download::SharedTasks tasks_;  // last: joined first
};

}  // namespace lemon
