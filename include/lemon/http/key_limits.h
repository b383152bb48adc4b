// Per-key limits: requests at once (max_concurrent) and
// requests a minute (requests_per_minute), checked when a request's head
// has been read, before its body, so nothing reaches a backend for a
// refused request. A refusal is 429 with Retry-After.
//
// The rate is a token bucket of `requests_per_minute` tokens refilled
// continuously: a burst of the whole minute's allowance passes, then one
// request every 60/rate seconds. take_request() is that policy as a pure
// function; KeyLimiter keeps the buckets and in-flight counts.
//
// Thread-safety: KeyLimiter may be used from any thread; a Lease is owned
// by the request it admits.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"
#include "lemon/http/api_keys.h"

namespace lemon::http {

struct RateBucket {
  double tokens = -1;  // < 0: never used (full)
  std::int64_t at_ms = 0;
};

// Takes one request from `bucket` at `now_ms`: 0 when taken, else the
// milliseconds until one token is there again (nothing is taken).
std::int64_t take_request(RateBucket& bucket, int per_minute, std::int64_t now_ms);

class KeyLimiter {
 public:
  // Holds one of its key's requests-at-once while it lives.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

   private:
    friend class KeyLimiter;
    Lease(KeyLimiter* owner, std::string name) : owner_(owner), name_(std::move(name)) {}
    KeyLimiter* owner_ = nullptr;
    std::string name_;
  };

  // Admits one request of `key` now (steady milliseconds): a Lease, or
  // kRateLimited naming the limit, with Retry-After.
  Result<Lease> admit(const ApiKey& key, std::int64_t now_ms);
  // Requests of key `name` admitted and not yet done.
  int in_flight(const std::string& name) const;

 private:
  struct KeyState {
    int in_flight = 0;
    RateBucket bucket;
  };
  void release(const std::string& name);

  mutable Mutex mu_;
  std::map<std::string, KeyState, std::less<>> keys_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon::http
