// In-process test doubles for the router's collaborators: a ModelResolver
// over a fixed table, and a ServerFactory whose WrappedServers start and stop
// instantly (or when a test opens a gate), record what happened, and can be
// told to fail or crash. No processes, no sockets, no sleeps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "lemon/backends/server_factory.h"
#include "lemon/models/catalogue.h"
#include "lemon/router/router.h"

namespace lemon::testing {

// A model entry for FakeResolver: type from labels, device from recipe.
ModelInfo fake_model(const std::string& name, const std::string& recipe = "llamacpp",
                     std::vector<std::string> labels = {}, bool downloaded = true);

class FakeResolver final : public ModelResolver {
 public:
  void add(ModelInfo info);
  Result<ModelInfo> resolve(std::string_view name) const override;
  // Every name is its own; counts the calls (a catalogue's are not free).
  std::optional<std::string> internal_name(std::string_view name) const override;
  int name_lookups() const { return name_lookups_.load(); }

 private:
  mutable std::atomic<int> name_lookups_{0};
  mutable std::mutex mu_;
  std::map<std::string, ModelInfo, std::less<>> models_;
};

// A one-shot latch a fake start() can wait on.
class Gate {
 public:
  void open();
  void wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class FakeServerFactory;

class FakeServer final : public WrappedServer {
 public:
  FakeServer(FakeServerFactory& factory, ModelInfo model, RecipeOptions options);
  Status prepare() override;
  Status start(const std::function<bool()>& cancelled) override;
  void stop() override;
  bool exited() const override;
  std::string base_url() const override { return "http://fake/" + model_name(); }
  std::optional<int> pid() const override { return std::nullopt; }
  net::UpstreamClient& client() override;
  std::optional<std::string> upstream_path(ApiRoute route) const override;
  std::vector<std::string> last_output(std::size_t) const override { return {}; }
  RequestSlots slots() const override { return {slots_, options().ctx_size(), queued_ahead_}; }

  // Simulates the backend dying on its own.
  void crash();

 private:
  FakeServerFactory& factory_;
  const int slots_;
  const int queued_ahead_;
  mutable std::mutex mu_;
  bool running_ = false;
};

class FakeServerFactory final : public ServerFactory {
 public:
  struct Script {
    int fail_starts = 0;  // the next N starts fail with fail_code
    ErrorCode fail_code = ErrorCode::kBackendExited;
    std::optional<ErrorCode> prepare_error = std::nullopt;
    std::shared_ptr<Gate> gate = nullptr;  // start() waits for it when set
    int slots = 0;                         // request slots (0: no limit)
    int queued_ahead = 0;                  // RequestSlots::queued_ahead
  };

  Result<std::shared_ptr<WrappedServer>> create(const ModelInfo& model,
                                                const RecipeOptions& options) override;

  void script(const std::string& model, Script s);
  // start() of `model` blocks until the returned gate is opened.
  std::shared_ptr<Gate> gate(const std::string& model);

  // "start:m", "stop:m", "crash:m", in order.
  std::vector<std::string> log() const;
  int count(const std::string& entry) const;
  // The live (started, not stopped) server of `model`, or nullptr.
  std::shared_ptr<FakeServer> live(const std::string& model) const;
  // Blocks until `entry` has been logged at least `times` times.
  void wait_for(const std::string& entry, int times = 1) const;

  // Called by FakeServer.
  void record(const std::string& entry);
  Status next_start(const std::string& model, std::shared_ptr<Gate>& gate);
  std::optional<ErrorCode> prepare_error(const std::string& model) const;
  int slots(const std::string& model) const;
  int queued_ahead(const std::string& model) const;
  void set_live(const std::string& model, std::shared_ptr<FakeServer> server);

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, Script> scripts_;
  std::vector<std::string> log_;
  std::map<std::string, std::weak_ptr<FakeServer>> live_;
};

// Records router events and lets a test wait for one.
class EventLog {
 public:
  std::function<void(const RouterEvent&)> sink();
  // Blocks until an event of `kind` for `model` has been seen `times` times.
  void wait_for(RouterEvent::Kind kind, const std::string& model, int times = 1) const;
  int count(RouterEvent::Kind kind, const std::string& model) const;
  std::vector<std::string> names() const;  // "load_started:m", ...

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<RouterEvent> events_;
};

}  // namespace lemon::testing
