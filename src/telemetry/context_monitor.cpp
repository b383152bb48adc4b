#include "lemon/telemetry/context_monitor.h"
#include "lemon/core/mutex.h"

#include "lemon/net/upstream_client.h"

namespace lemon::telemetry {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::seconds(1);

int int_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int>() : 0;
}

}  // namespace

int ModelContext::used() const {
  int n = 0;
  for (const auto& s : slots) {
    n += s.used;
  }
  return n;
}

int ModelContext::total() const {
  int n = 0;
  for (const auto& s : slots) {
    n += s.n_ctx;
  }
  return n;
}

double ModelContext::fraction() const {
  const int t = total();
  return t > 0 ? static_cast<double>(used()) / t : 0.0;
}

nlohmann::json ModelContext::to_json() const {
  nlohmann::json per_slot = nlohmann::json::array();
  for (const auto& s : slots) {
    per_slot.push_back({{"replica", s.replica},
                        {"id", s.id},
                        {"n_ctx", s.n_ctx},
                        {"used", s.used},
                        {"processing", s.processing}});
  }
  return {{"model", model},
          {"used", used()},
          {"total", total()},
          {"fraction", fraction()},
          {"slots", std::move(per_slot)}};
}

std::vector<SlotContext> parse_slots(const nlohmann::json& slots) {
  std::vector<SlotContext> out;
  if (!slots.is_array()) {
    return out;
  }
  for (const auto& s : slots) {
    if (!s.is_object() || int_field(s, "n_ctx") <= 0) {
      continue;
    }
    SlotContext c;
    c.id = int_field(s, "id");
    c.n_ctx = int_field(s, "n_ctx");
    c.processing = s.value("is_processing", false);
    int decoded = 0;
    if (auto next = s.find("next_token"); next != s.end()) {
      if (next->is_array() && !next->empty() && next->front().is_object()) {
        decoded = int_field(next->front(), "n_decoded");
      } else if (next->is_object()) {
        decoded = int_field(*next, "n_decoded");
      }
    }
    c.used = std::min(c.n_ctx, int_field(s, "n_prompt_tokens") + decoded);
    out.push_back(c);
  }
  return out;
}

ContextMonitor::ContextMonitor(Router& router, EventBus& events)
    : router_(router), events_(events) {}

ContextMonitor::~ContextMonitor() {
  stop();
}

void ContextMonitor::start() {
  thread_ = std::thread([this] { loop(); });
}

void ContextMonitor::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::map<std::string, ModelContext> ContextMonitor::poll() const {
  std::map<std::string, ModelContext> out;
  auto view = router_.view();
  for (const auto& s : view->servers) {
    if (s.info.recipe != "llamacpp" || s.info.draining) {
      continue;
    }
    net::UpstreamRequest req;
    req.method = "GET";
    req.path = "/slots";
    net::CallOptions options;
    options.connect_timeout = std::chrono::milliseconds(500);
    options.total_timeout = std::chrono::milliseconds(1000);
    options.max_response_bytes = 4u << 20;
    auto reply = s.server().client().send(req, options);
    if (!reply.ok() || reply->status != 200) {
      continue;
    }
    auto j = nlohmann::json::parse(reply->body, nullptr, false);
    auto slots = parse_slots(j);
    if (slots.empty()) {
      continue;
    }
    ModelContext& c = out[s.info.model_name];  // replicas add their slots
    c.model = s.info.model_name;
    for (auto& slot : slots) {
      slot.replica = s.info.replica;
      c.slots.push_back(slot);
    }
  }
  return out;
}

std::map<std::string, ModelContext> ContextMonitor::current(std::chrono::milliseconds max_age) {
  {
    MutexLock lock(mu_);
    if (Clock::now() - refreshed_ < max_age) {
      return latest_;
    }
  }
  MutexLock refresh(refresh_mu_);
  {
    MutexLock lock(mu_);
    if (Clock::now() - refreshed_ < max_age) {
      return latest_;  // another caller refreshed meanwhile
    }
  }
  auto fresh = poll();
  MutexLock lock(mu_);
  latest_ = fresh;
  refreshed_ = Clock::now();
  return fresh;
}

void ContextMonitor::loop() {
  std::map<std::string, nlohmann::json> sent;
  int followers_before = 0;
  MutexLock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, kPollInterval, [&]() LEMON_REQUIRES(mu_) { return stopping_; });
    if (stopping_) {
      break;
    }
    const int followers = events_.followers();
    if (followers > followers_before) {
      sent.clear();  // a new follower gets the current figures, changed or not
    }
    followers_before = followers;
    if (followers == 0) {
      continue;
    }
    lock.unlock();
    auto now = current(std::chrono::milliseconds(900));
    // A model that went is forgotten: when it loads again its figures are
    // news, even if they equal those it had (the dashboard dropped them).
    std::erase_if(sent, [&](const auto& entry) { return now.count(entry.first) == 0; });
    for (const auto& [model, c] : now) {
      auto j = c.to_json();
      if (auto it = sent.find(model); it != sent.end() && it->second == j) {
        continue;  // unchanged since the last event
      }
      sent[model] = j;
      events_.publish("context", j);
    }
    lock.lock();
  }
}

}  // namespace lemon::telemetry
