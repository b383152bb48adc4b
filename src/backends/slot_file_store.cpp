#include "lemon/backends/slot_file_store.h"

#include <algorithm>

#include "backend_call.h"
#include "lemon/backends/slot_files.h"
#include "lemon/core/enum_names.h"
#include "lemon/core/log.h"
#include "lemon/net/upstream_client.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Reply {
  int status = 0;
  nlohmann::json body;
  std::optional<Error> failure;  // the call itself failed (timeout, refused)
};

// One call to the backend with what is left of `deadline`.
Reply call(WrappedServer& server, const std::string& method, const std::string& path,
           const std::string& body, Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) {
    return {0, {}, Error(ErrorCode::kGatewayTimeout, "no time left")};
  }
  auto reply = call_backend(server.client(), method, path, body, left);
  if (!reply.ok()) {
    return {0, {}, std::move(reply).error()};
  }
  return {reply->status, nlohmann::json::parse(reply->body, nullptr, false), std::nullopt};
}

std::string backend_message(const nlohmann::json& body) {
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    return body["error"].value("message", std::string());
  }
  return {};
}

long long number(const nlohmann::json& body, const char* key) {
  auto it = body.is_object() ? body.find(key) : body.end();
  return it != body.end() && it->is_number() ? it->get<long long>() : 0;
}

void remove_quietly(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

}  // namespace

namespace {

constexpr auto kSlotFileEventNames = std::to_array<EnumName<SlotFileEvent::Kind>>(
    {{SlotFileEvent::Kind::kSaved, "slot_saved"},
     {SlotFileEvent::Kind::kRestored, "slot_restored"},
     {SlotFileEvent::Kind::kRestoreFailed, "slot_restore_failed"}});

}  // namespace

const char* slot_file_event_name(SlotFileEvent::Kind kind) {
  return name_of(kSlotFileEventNames, kind, "");
}

SlotFileStore::SlotFileStore(SlotFileStoreSettings settings) : settings_(std::move(settings)) {}

namespace {

// The slot files of `replica` in `dir` for slots below `total`, by slot.
std::vector<std::pair<int, fs::path>> replica_files(const fs::path& dir, int replica, int total) {
  std::vector<std::pair<int, fs::path>> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto key = slot_of_file(entry.path().filename().string());
    if (key && key->replica == replica && key->slot < total && entry.is_regular_file(ec)) {
      files.emplace_back(key->slot, entry.path());  // a larger slot: kept for a larger server
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<int> SlotFileStore::saved_slots(WrappedServer& server, int replica) {
  std::vector<int> out;
  const fs::path dir = server.slot_save_dir();
  if (!dir.empty()) {
    for (const auto& [slot, path] : replica_files(dir, replica, server.slots().total)) {
      out.push_back(slot);
    }
  }
  return out;
}

std::vector<SlotFileEvent> SlotFileStore::restore_into(WrappedServer& server, int replica,
                                                       const std::vector<int>& slots) {
  std::vector<SlotFileEvent> events;
  const fs::path dir = server.slot_save_dir();
  if (dir.empty()) {
    return events;
  }
  std::error_code ec;
  // Files of another identity of this model can never be restored: gone.
  for (const auto& other : fs::directory_iterator(dir.parent_path(), ec)) {
    if (other.path() != dir && other.is_directory(ec)) {
      fs::remove_all(other.path(), ec);
      logger("router")->info("'{}': deleted the slots saved by a server of another identity ({})",
                             server.model_name(), other.path().filename().string());
    }
  }
  const auto deadline = Clock::now() + settings_.timeout;
  for (const auto& [slot, path] : replica_files(dir, replica, server.slots().total)) {
    if (std::find(slots.begin(), slots.end(), slot) == slots.end()) {
      continue;  // saved since the router took hold of the slots: kept for next time
    }
    const auto started = Clock::now();
    const std::string body = nlohmann::json{{"filename", path.filename().string()}}.dump();
    Reply r =
        call(server, "POST", "/slots/" + std::to_string(slot) + "?action=restore", body, deadline);
    if (r.failure) {
      logger("router")->warn("'{}': restoring slot {} did not finish: {}", server.model_name(),
                             slot, r.failure->message());
      break;  // out of time or the server is gone; the files stay for next time
    }
    SlotFileEvent e;
    e.slot = slot;
    e.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (r.status != 200) {
      e.kind = SlotFileEvent::Kind::kRestoreFailed;
      e.code = ErrorCode::kUpstreamProtocol;
      e.detail = backend_message(r.body);
      if (e.detail.empty()) {
        e.detail = "answered " + std::to_string(r.status);
      }
      logger("router")->warn("'{}': slot {} was not restored ({}); its file is deleted",
                             server.model_name(), slot, e.detail);
      remove_quietly(path);
    } else {
      e.kind = SlotFileEvent::Kind::kRestored;
      e.tokens = number(r.body, "n_restored");
      e.bytes = number(r.body, "n_read");
      fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
      logger("router")->info("'{}': restored slot {} ({} tokens, {} bytes, {:.0f} ms)",
                             server.model_name(), slot, e.tokens, e.bytes, e.seconds * 1000);
    }
    events.push_back(std::move(e));
  }
  forget_sizes(server.model_name());
  return events;
}

std::vector<SlotFileEvent> SlotFileStore::save_from(WrappedServer& server, int replica,
                                                    const std::vector<int>& session_slots) {
  std::vector<SlotFileEvent> events;
  const fs::path dir = server.slot_save_dir();
  if (dir.empty() || server.exited()) {
    return events;
  }
  const auto deadline = Clock::now() + settings_.timeout;
  Reply listed = call(server, "GET", "/slots", "", deadline);
  if (listed.failure || listed.status != 200) {
    logger("router")->debug("'{}': no slots saved (GET /slots failed)", server.model_name());
    return events;
  }
  const std::vector<int> chosen =
      slots_to_save(parse_slot_uses(listed.body), session_slots, settings_.min_tokens);
  if (chosen.empty()) {
    return events;
  }
  std::error_code ec;
  const auto space = fs::space(dir, ec);
  constexpr std::uintmax_t kLeastFree = 256u << 20;
  if (ec || space.available < kLeastFree) {
    logger("router")->warn("'{}': the disk of {} is short of space; its slots are not saved",
                           server.model_name(), dir.string());
    return events;
  }
  for (const int slot : chosen) {
    const auto started = Clock::now();
    const std::string name = slot_file_name({replica, slot});
    Reply r = call(server, "POST", "/slots/" + std::to_string(slot) + "?action=save",
                   nlohmann::json{{"filename", name}}.dump(), deadline);
    if (r.failure || r.status != 200) {
      logger("router")->warn("'{}': slot {} not saved: {}", server.model_name(), slot,
                             r.failure ? r.failure->message() : backend_message(r.body));
      remove_quietly(dir / name);  // never a partial file
      if (r.failure) {
        break;  // out of time: the stop goes on
      }
      continue;
    }
    SlotFileEvent e;
    e.kind = SlotFileEvent::Kind::kSaved;
    e.slot = slot;
    e.tokens = number(r.body, "n_saved");
    e.bytes = number(r.body, "n_written");
    e.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    logger("router")->info("'{}': saved slot {} ({} tokens, {} bytes, {:.0f} ms)",
                           server.model_name(), slot, e.tokens, e.bytes, e.seconds * 1000);
    events.push_back(std::move(e));
  }
  keep_within_budget();
  return events;
}

void SlotFileStore::keep_within_budget() {
  MutexLock lock(sweep_mu_);
  std::vector<CachedSlotFile> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(settings_.root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) {
      continue;
    }
    const auto used = fs::last_write_time(it->path(), ec);
    files.push_back(
        {it->path().string(), static_cast<std::uint64_t>(it->file_size(ec)),
         std::chrono::duration_cast<std::chrono::nanoseconds>(used.time_since_epoch()).count()});
  }
  for (const auto& path : files_over_budget(std::move(files), settings_.budget_bytes)) {
    logger("router")->info("slot cache over --slot-cache-size: deleting {}", path);
    remove_quietly(path);
  }
  forget_sizes("");  // a save (and maybe a sweep) changed them
}

void SlotFileStore::forget(const std::string& model) {
  std::error_code ec;
  fs::remove_all(settings_.root / slot_model_folder(model), ec);
  forget_sizes(model);
}

void SlotFileStore::forget_sizes(const std::string& model) {
  MutexLock lock(sizes_mu_);
  ++sizes_generation_;
  if (model.empty()) {
    sizes_.clear();
  } else {
    sizes_.erase(model);
  }
}

long long SlotFileStore::saved_bytes(const std::string& model) const {
  std::uint64_t generation = 0;
  {
    MutexLock lock(sizes_mu_);
    if (auto known = sizes_.find(model); known != sizes_.end()) {
      return known->second;
    }
    generation = sizes_generation_;
  }
  long long total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(settings_.root / slot_model_folder(model), ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      total += static_cast<long long>(it->file_size(ec));
    }
  }
  MutexLock lock(sizes_mu_);
  if (generation == sizes_generation_) {
    sizes_[model] = total;  // no change of the files meanwhile
  }
  return total;
}

}  // namespace lemon
