#include "lemon/models/model_store.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "lemon/core/log.h"
#include "lemon/download/disk_space.h"
#include "lemon/download/transfer.h"
#include "lemon/models/download_plan.h"
#include "lemon/models/hf_cache.h"
#include "lemon/models/hub_cache_writer.h"

namespace lemon {

namespace fs = std::filesystem;

namespace {

// What a pull must do for one planned file.
enum class FileAction {
  kNothing,  // the snapshot entry is there and complete
  kLink,     // the blob is complete; only the snapshot entry is missing
  kFetch,    // the blob must be downloaded (resuming any .incomplete)
};

struct FileStep {
  PlannedFile planned;
  fs::path repo_dir;
  FileAction action = FileAction::kFetch;
};

download::Checksum checksum_of(const HubFile& f) {
  if (f.sha256) {
    return {download::Checksum::Kind::kSha256, *f.sha256};
  }
  return {download::Checksum::Kind::kGitBlobSha1, f.blob_id};
}

Error offline_error(const std::string& name) {
  return Error(ErrorCode::kOffline,
               "model '" + name +
                   "' is not downloaded, and offline mode (LEMONADE_OFFLINE) forbids "
                   "downloading it; pull it while online, or unset LEMONADE_OFFLINE",
               "model");
}

// Links every complete blob of the listing that its snapshot lacks (files
// unchanged since an older commit another model downloaded), so moving
// refs/main never hides a model that is on disk.
void link_known_blobs(const fs::path& repo_dir, const RepoListing& listing) {
  for (const auto& f : listing.files) {
    if (hf::is_complete_file(hf::snapshot_entry(repo_dir, listing.commit, f.path), f.size) ||
        !hf::is_complete_file(hf::blob_path(repo_dir, f.etag()), f.size)) {
      continue;
    }
    Status linked = hf::link_snapshot_entry(repo_dir, listing.commit, f.path, f.etag());
    if (!linked.ok()) {
      logger("models")->warn("{}", linked.error().message());
    }
  }
}

}  // namespace

ModelStore::ModelStore(ModelCatalogue& catalogue, HubClient hub)
    : catalogue_(catalogue), hub_(std::move(hub)), hub_cache_(catalogue.sources().hf_hub_cache) {}

ModelStore::~ModelStore() = default;

Result<ModelStore::Download> ModelStore::download(std::string_view name) {
  auto info = catalogue_.find(name);
  if (!info) {
    return Error(ErrorCode::kModelNotFound, "model '" + std::string(name) + "' not found", "model");
  }
  if (info->recipe == "remote") {
    return Error(ErrorCode::kServedRemotely,
                 "model '" + std::string(name) +
                     "' is served by another machine (recipe remote): there is nothing to "
                     "download",
                 "model");
  }
  std::string key(name);
  return tasks_.run_or_join(
      key,
      [this, key](download::TaskContext& ctx) {
        // A download is background work: its threads (this one, and the
        // hashing thread it starts, which inherits the value) yield the CPU
        // to request threads, so /health stays fast on a small machine.
        ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
        if (!observer_.on_progress) {
          return run_pull(key, ctx);
        }
        // Progress goes to the followers and to the observer.
        struct Observed final : download::TaskContext {
          Observed(download::TaskContext& inner, const Observer& o, const std::string& model)
              : inner_(inner), observer_(o), model_(model) {}
          void publish(const download::TaskProgress& p) override {
            inner_.publish(p);
            observer_.on_progress(model_, p);
          }
          bool cancelled() const override { return inner_.cancelled(); }
          download::TaskContext& inner_;
          const Observer& observer_;
          const std::string& model_;
        } observed(ctx, observer_, key);
        return run_pull(key, observed);
      },
      [this, key](const Status& result) {
        if (observer_.on_end) {
          observer_.on_end(key, result);
        }
        if (!result.ok()) {
          logger("models")->info("pull {} ended: {}: {}", key,
                                 error_code_name(result.error().code()), result.error().message());
        }
      });
}

Status ModelStore::wait(Download& d, const DownloadWait& wait) const {
  download::FollowHooks hooks = wait;
  hooks.stopping = [this] { return shutting_down_.load(); };
  return download::follow(d, hooks);
}

Status ModelStore::ensure_downloaded(std::string_view name, const DownloadWait& wait) {
  auto info = catalogue_.resolve(name);
  if (!info.ok()) {
    return std::move(info).error();
  }
  if (info->downloaded) {
    return ok_status();
  }
  if (hub_.offline()) {
    return offline_error(info->name);
  }
  if (auto repos = plan_repositories(*info); !repos.ok()) {
    // Nothing this store can fetch (local path, FLM): the load's own error
    // says what is missing.
    std::string missing =
        info->missing_paths.empty() ? info->checkpoint() : info->missing_paths.front();
    return Error(ErrorCode::kModelFilesMissing,
                 "model '" + info->name + "' is not downloaded: missing " + missing, "model");
  }
  auto d = download(name);
  if (!d.ok()) {
    return std::move(d).error();
  }
  return this->wait(*d, wait);
}

void ModelStore::shutdown() {
  shutting_down_ = true;
}

void ModelStore::stop() {
  shutdown();
  tasks_.close();
}

bool ModelStore::downloading(std::string_view name) const {
  return tasks_.running(std::string(name));
}

Status ModelStore::run_pull(const std::string& name, download::TaskContext& ctx) {
  auto log = logger("models");
  auto cancelled = [this, &ctx] { return shutting_down_ || ctx.cancelled(); };
  auto resolved = catalogue_.resolve(name);
  if (!resolved.ok()) {
    return std::move(resolved).error();
  }
  const ModelInfo& info = *resolved;
  auto repos = plan_repositories(info);
  if (!repos.ok()) {
    if (info.downloaded) {
      return ok_status();  // FLM or local models that are already there
    }
    return std::move(repos).error();
  }
  if (hub_.offline()) {
    return info.downloaded ? ok_status() : offline_error(name);
  }
  if (hub_cache_.empty()) {
    return Error(ErrorCode::kInternal, "no Hugging Face hub cache directory is configured");
  }

  std::map<std::string, RepoListing> listings;
  for (const auto& repo : *repos) {
    auto listing = hub_.list(repo, cancelled);
    if (!listing.ok()) {
      if (info.downloaded && listing.error().code() == ErrorCode::kNetworkError) {
        log->warn("pull {}: {}; keeping the downloaded copy", name, listing.error().message());
        return ok_status();
      }
      return std::move(listing).error();
    }
    listings.emplace(repo, std::move(listing).value());
  }
  auto plan = plan_download(info, listings);
  if (!plan.ok()) {
    return std::move(plan).error();
  }

  std::vector<FileStep> steps;
  std::uint64_t bytes_total = 0;
  std::uint64_t bytes_to_fetch = 0;
  for (auto& planned : *plan) {
    FileStep step;
    step.repo_dir = hf::repo_dir(hub_cache_, planned.repo);
    const HubFile& f = planned.file;
    if (hf::is_complete_file(hf::snapshot_entry(step.repo_dir, planned.commit, f.path), f.size)) {
      step.action = FileAction::kNothing;
    } else if (hf::is_complete_file(hf::blob_path(step.repo_dir, f.etag()), f.size)) {
      step.action = FileAction::kLink;
    } else {
      step.action = FileAction::kFetch;
      std::uint64_t have = hf::incomplete_bytes(step.repo_dir, f.etag());
      bytes_to_fetch += f.size > have ? f.size - have : 0;
    }
    bytes_total += f.size;
    step.planned = std::move(planned);
    steps.push_back(std::move(step));
  }
  if (Status space = download::check_free_space(hub_cache_, bytes_to_fetch); !space.ok()) {
    return space;
  }
  log->info("pull {}: {} file(s), {} bytes to fetch", name, steps.size(), bytes_to_fetch);

  download::TaskProgress progress;
  progress.total_files = static_cast<int>(steps.size());
  progress.bytes_total = bytes_total;
  std::uint64_t done_before = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const FileStep& step = steps[i];
    const PlannedFile& p = step.planned;
    progress.file = p.file.path;
    progress.file_index = static_cast<int>(i);
    progress.file_bytes_total = p.file.size;
    progress.file_bytes_done = step.action == FileAction::kFetch ? 0 : p.file.size;
    progress.bytes_done = done_before + progress.file_bytes_done;
    ctx.publish(progress);
    if (step.action == FileAction::kFetch) {
      auto lock = hf::lock_blob(step.repo_dir, p.file.etag(), cancelled);
      if (!lock.ok()) {
        return std::move(lock).error();
      }
      // Someone else may have finished this blob while we waited for it.
      if (!hf::is_complete_file(hf::blob_path(step.repo_dir, p.file.etag()), p.file.size)) {
        download::FileRequest request;
        request.url = hub_.file_url(p.repo, p.commit, p.file.path);
        request.partial_path = hf::incomplete_path(step.repo_dir, p.file.etag());
        request.final_path = hf::blob_path(step.repo_dir, p.file.etag());
        request.expected_size = p.file.size;
        request.checksum = checksum_of(p.file);
        request.bearer_token = hub_.settings().token;
        auto on_progress = [&](const download::FileProgress& fp) {
          progress.file_bytes_done = fp.bytes_done;
          progress.bytes_done = done_before + fp.bytes_done;
          ctx.publish(progress);
        };
        Status fetched =
            download::fetch_file(request, hub_.settings().transfer, on_progress, cancelled);
        if (!fetched.ok() && fetched.error().code() == ErrorCode::kChecksumMismatch) {
          // The corrupt file is gone; one more try from scratch.
          log->warn("pull {}: {}; downloading it again", name, fetched.error().message());
          fetched = download::fetch_file(request, hub_.settings().transfer, on_progress, cancelled);
        }
        if (!fetched.ok()) {
          return fetched;
        }
      }
    }
    if (step.action != FileAction::kNothing) {
      Status linked = hf::link_snapshot_entry(step.repo_dir, p.commit, p.file.path, p.file.etag());
      if (!linked.ok()) {
        return linked;
      }
    }
    done_before += p.file.size;
    progress.file_bytes_done = p.file.size;
    progress.bytes_done = done_before;
    ctx.publish(progress);
  }
  for (const auto& [repo, listing] : listings) {
    fs::path dir = hf::repo_dir(hub_cache_, repo);
    link_known_blobs(dir, listing);
    if (Status ref = hf::write_ref(dir, "main", listing.commit); !ref.ok()) {
      return ref;
    }
  }
  log->info("pull {}: done", name);
  return ok_status();
}

}  // namespace lemon
