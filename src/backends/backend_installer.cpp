#include "lemon/backends/backend_installer.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "lemon/backends/binary_locator.h"
#include "lemon/core/atomic_file.h"
#include "lemon/core/enum_names.h"
#include "lemon/core/log.h"
#include "lemon/download/archive.h"
#include "lemon/download/disk_space.h"

namespace lemon {

namespace fs = std::filesystem;

namespace {

std::string read_version(const fs::path& dir) {
  std::ifstream in(dir / "version.txt");
  std::string v;
  std::getline(in, v);
  while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) {
    v.pop_back();
  }
  return v;
}

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The first executable named `name` under `dir` (Lemonade searches the
// install folder recursively too).
fs::path find_executable(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == name && executable_file(it->path())) {
      return it->path();
    }
  }
  return {};
}

// Runs `exe --version` with its folder as LD_LIBRARY_PATH; OK when it exits
// 0 within 10 s. No shell: argv only.
Status check_runs(const fs::path& exe) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("LD_LIBRARY_PATH=")) {
      continue;
    }
    env_strings.emplace_back(*e);
  }
  env_strings.push_back("LD_LIBRARY_PATH=" + exe.parent_path().string());
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::string path = exe.string();
  std::string flag = "--version";
  char* argv[] = {path.data(), flag.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return Error(
        ErrorCode::kInvalidArchive,
        exe.filename().string() + " from the release cannot be started: " + errno_message(rc));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      break;
    }
    if (done < 0 && errno != EINTR) {
      return Error(ErrorCode::kInternal, "waitpid failed: " + errno_message(errno));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return Error(ErrorCode::kInvalidArchive,
                   exe.filename().string() + " --version did not finish within 10 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error(ErrorCode::kInvalidArchive,
                 exe.filename().string() + " from the release does not run (`--version` " +
                     (WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                        : std::string("was killed by a signal")) +
                     ")");
  }
  return ok_status();
}

// Puts `staging` where `target` is, atomically: exchanged with an existing
// install (then removed), or renamed into place.
Status swap_into_place(const fs::path& staging, const fs::path& target) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(target, ec))) {
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
      return Error(ErrorCode::kInternal,
                   "cannot swap in " + target.string() + ": " + errno_message(errno));
    }
    fs::remove_all(staging, ec);  // now the old install
    return ok_status();
  }
  fs::rename(staging, target, ec);
  if (ec) {
    return Error(ErrorCode::kInternal,
                 "cannot move the install to " + target.string() + ": " + ec.message());
  }
  return ok_status();
}

nlohmann::json read_versions(const std::string& path) {
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

}  // namespace

namespace {

constexpr auto kBackendStateNames = std::to_array<EnumName<BackendState::Kind>>(
    {{BackendState::Kind::kInstalled, "installed"},
     {BackendState::Kind::kInstallable, "installable"},
     {BackendState::Kind::kUpdateRequired, "update_required"},
     {BackendState::Kind::kUnsupported, "unsupported"}});

}  // namespace

const char* backend_state_name(BackendState::Kind kind) {
  return name_of(kBackendStateNames, kind, "unsupported");
}

BackendInstaller::BackendInstaller(InstallerSettings settings) : settings_(std::move(settings)) {}

BackendInstaller::~BackendInstaller() {
  shutdown();
}

void BackendInstaller::shutdown() {
  shutting_down_ = true;
}

Result<BackendRelease> BackendInstaller::release(std::string_view recipe,
                                                 std::string_view backend) const {
  auto versions = read_versions(versions_file(settings_.cache_dir, settings_.resources_dir));
  auto version = pinned_version(versions, recipe, backend);
  if (!version.ok()) {
    return std::move(version).error();
  }
  return linux_release(recipe, backend, *version, settings_.releases_base, settings_.rocm_arch);
}

BackendState BackendInstaller::state(std::string_view recipe, std::string_view backend) const {
  BackendState s;
  const std::string exe_name = backend_executable(recipe);
  BinaryQuery query{std::string(recipe), std::string(backend), exe_name};
  if (const char* env = std::getenv(binary_env_var(query).c_str());
      env != nullptr && *env != '\0' && executable_file(env)) {
    s.kind = BackendState::Kind::kInstalled;
    s.executable = env;
    s.message = "from " + binary_env_var(query);
    return s;
  }
  auto rel = release(recipe, backend);
  const fs::path dir =
      fs::path(settings_.cache_dir) / "bin" / std::string(recipe) / std::string(backend);
  fs::path exe = find_executable(dir, exe_name);
  if (!exe.empty()) {
    s.executable = exe.string();
    s.version = read_version(dir);
  }
  if (!rel.ok()) {
    s.kind = exe.empty() ? BackendState::Kind::kUnsupported : BackendState::Kind::kInstalled;
    s.message = rel.error().message();
    return s;
  }
  s.pinned_version = rel->version;
  s.release_url = rel->url;
  if (exe.empty()) {
    s.kind = BackendState::Kind::kInstallable;
    s.message = "not installed; POST /api/v1/install {\"recipe\": \"" + std::string(recipe) +
                "\", \"backend\": \"" + std::string(backend) + "\"} installs " + rel->version;
  } else if (s.version != rel->version) {
    s.kind = BackendState::Kind::kUpdateRequired;
    s.message = "installed " + (s.version.empty() ? std::string("(unknown)") : s.version) +
                ", pinned " + rel->version;
  } else {
    s.kind = BackendState::Kind::kInstalled;
  }
  return s;
}

bool BackendInstaller::installing(std::string_view recipe, std::string_view backend) const {
  return tasks_.running(std::string(recipe) + ":" + std::string(backend));
}

Result<download::SharedTasks::Follower> BackendInstaller::install(std::string_view recipe,
                                                                  std::string_view backend) {
  auto rel = release(recipe, backend);
  if (!rel.ok()) {
    return std::move(rel).error();
  }
  std::string key = std::string(recipe) + ":" + std::string(backend);
  return tasks_.run_or_join(
      key,
      [this, r = *rel](download::TaskContext& ctx) {
        ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);  // background work
        return run_install(r, ctx);
      },
      [r = *rel](const Status& result) {
        if (!result.ok()) {
          logger("backends")
              ->info("install {}:{} ended: {}: {}", r.recipe, r.backend,
                     error_code_name(result.error().code()), result.error().message());
        }
      });
}

Status BackendInstaller::wait(download::SharedTasks::Follower& f,
                              download::FollowHooks hooks) const {
  hooks.stopping = [this] { return shutting_down_.load(); };
  return download::follow(f, hooks);
}

Status BackendInstaller::ensure_installed(std::string_view recipe, std::string_view backend,
                                          download::FollowHooks hooks) {
  BackendState s = state(recipe, backend);
  if (s.kind == BackendState::Kind::kInstalled || s.kind == BackendState::Kind::kUpdateRequired) {
    return ok_status();  // something runnable is there
  }
  auto f = install(recipe, backend);
  if (!f.ok()) {
    return std::move(f).error();
  }
  return wait(*f, std::move(hooks));
}

Status BackendInstaller::run_install(const BackendRelease& r, download::TaskContext& ctx) {
  auto log = logger("backends");
  auto cancelled = [this, &ctx] { return shutting_down_ || ctx.cancelled(); };
  const std::string name = r.recipe + ":" + r.backend;
  BackendState now = state(r.recipe, r.backend);
  if (now.kind == BackendState::Kind::kInstalled) {
    log->info("{} is installed ({}); nothing to do", name,
              now.version.empty() ? now.message : now.version);
    return ok_status();
  }
  if (settings_.offline) {
    return Error(
        ErrorCode::kOffline,
        "backend " + name +
            " is not installed, and offline mode (LEMONADE_OFFLINE) "
            "forbids downloading it; install it while online with `lemonade-server recipes "
            "--install " +
            name + "`",
        "backend");
  }
  const fs::path bin = fs::path(settings_.cache_dir) / "bin";
  const fs::path downloads = bin / ".downloads";
  const fs::path target = bin / r.recipe / r.backend;
  const fs::path staging =
      bin / r.recipe / ("." + r.backend + ".staging-" + std::to_string(::getpid()));
  std::error_code ec;
  // Leftovers of an install that was interrupted.
  for (fs::directory_iterator it(bin / r.recipe, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().starts_with("." + r.backend + ".staging-")) {
      fs::remove_all(it->path(), ec);
    }
  }

  log->info("installing {} {} from {}", name, r.version, r.url);
  download::TaskProgress progress;
  progress.file = r.asset;
  progress.total_files = 1;
  ctx.publish(progress);
  download::FileRequest request;
  request.url = r.url;
  request.partial_path = downloads / (r.asset + ".incomplete");
  request.final_path = downloads / r.asset;
  Status fetched = download::fetch_file(
      request, settings_.transfer,
      [&](const download::FileProgress& p) {
        progress.file_bytes_done = p.bytes_done;
        progress.file_bytes_total = p.bytes_total;
        progress.bytes_done = p.bytes_done;
        progress.bytes_total = p.bytes_total;
        ctx.publish(progress);
      },
      cancelled);
  if (!fetched.ok()) {
    return fetched;
  }
  // Unpacked, the release takes a few times the archive's size.
  std::error_code size_ec;
  const auto archive_bytes = fs::file_size(request.final_path, size_ec);
  if (Status space = download::check_free_space(bin, size_ec ? 0 : archive_bytes * 4);
      !space.ok()) {
    return space;
  }
  Status unpacked = download::extract_archive(request.final_path, staging, cancelled);
  fs::remove(request.final_path, ec);  // a bad archive is fetched anew next time
  if (!unpacked.ok()) {
    fs::remove_all(staging, ec);
    return unpacked;
  }
  fs::path exe = find_executable(staging, r.executable);
  if (exe.empty()) {
    fs::remove_all(staging, ec);
    return Error(ErrorCode::kInvalidArchive,
                 r.asset + " holds no executable named " + r.executable);
  }
  if (Status runs = check_runs(exe); !runs.ok()) {
    fs::remove_all(staging, ec);
    return runs;
  }
  if (Status v = write_file_atomically(staging / "version.txt", r.version); !v.ok()) {
    fs::remove_all(staging, ec);
    return v;
  }
  if (Status swapped = swap_into_place(staging, target); !swapped.ok()) {
    fs::remove_all(staging, ec);
    return swapped;
  }
  log->info("installed {} {} in {}", name, r.version, target.string());
  return ok_status();
}

Status BackendInstaller::uninstall(std::string_view recipe, std::string_view backend) {
  auto rel = release(recipe, backend);
  if (!rel.ok() && rel.error().code() == ErrorCode::kInvalidRequest) {
    return std::move(rel).error();
  }
  const fs::path target =
      fs::path(settings_.cache_dir) / "bin" / std::string(recipe) / std::string(backend);
  std::error_code ec;
  if (!fs::exists(target, ec)) {
    return ok_status();  // nothing to remove: a success, as in Lemonade
  }
  // Move it aside first, so a crash never leaves half an install in place.
  const fs::path aside = target.parent_path() /
                         ("." + std::string(backend) + ".removing-" + std::to_string(::getpid()));
  fs::rename(target, aside, ec);
  if (ec) {
    return Error(ErrorCode::kInternal, "cannot remove " + target.string() + ": " + ec.message());
  }
  fs::remove_all(aside, ec);
  logger("backends")->info("uninstalled {}:{}", recipe, backend);
  return ok_status();
}

}  // namespace lemon
