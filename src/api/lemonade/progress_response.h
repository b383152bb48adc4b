// The answer to a /pull or /install request, which follows a download or
// install task: with `stream`, Lemonade 9.4.1's SSE events (progress, then
// complete or error); otherwise `success` as JSON once the task ends, or
// the error envelope. A client that leaves cancels its following, not the
// task (others may follow it).
//
// Thread-safety: runs on the request's connection thread.
#pragma once

#include <functional>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/download/shared_task.h"
#include "lemon/net/server.h"

namespace lemon::api {

void respond_when_done(net::ResponseWriter& w, bool stream,
                       const std::function<Status(download::FollowHooks&)>& follow,
                       const nlohmann::json& success);

}  // namespace lemon::api
