#include "load_job.h"

#include "router_errors.h"

namespace lemon {

Result<std::shared_ptr<LoadJob>> make_load_job(const ModelResolver& models,
                                               const SettingsInForce& settings,
                                               std::string_view model_name,
                                               const std::optional<RecipeOptions>& request_options,
                                               std::optional<ModelType> required) {
  auto info = models.resolve(model_name);
  if (!info.ok()) {
    return std::move(info).error();
  }
  if (info->recipe == "remote") {
    // Served by another machine: the inference gateway sends it there;
    // nothing here loads it.
    return Error(ErrorCode::kServedRemotely,
                 "model '" + info->name +
                     "' is served by another machine (recipe remote): it is never loaded here",
                 "model");
  }
  if (required && info->type != *required) {
    return wrong_model_type(info->name, info->type, *required);
  }
  if (!info->downloaded) {
    std::string missing =
        info->missing_paths.empty() ? info->checkpoint() : info->missing_paths.front();
    return Error(ErrorCode::kModelFilesMissing,
                 "model '" + info->name + "' is not downloaded: missing " + missing, "model");
  }
  RecipeOptions layered =
      request_options ? request_options->inherit(info->saved_options) : info->saved_options;
  auto job = std::make_shared<LoadJob>();
  job->model = info->name;
  job->options = layered.inherit(settings.values.cli_options).restricted_to(info->recipe);
  job->explicit_options = request_options.has_value();
  job->request_options = request_options;
  job->cli_generation = settings.cli_generation;
  job->pinned = info->saved_pinned;
  job->priority = info->saved_priority;
  job->info = std::move(info.value());
  return job;
}

}  // namespace lemon
