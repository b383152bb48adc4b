#include "router_parts.h"

namespace lemon {

RouterParts::RouterParts(const ModelResolver& model_resolver, ServerFactory& server_factory,
                         RouterConfig router_config)
    : config(std::move(router_config)),
      models(model_resolver),
      factory(server_factory),
      settings(config),
      quota(config.max_queued_per_model, config.max_queued_total, board),
      readings(config.memory),
      defaults(config.default_models),
      table(config, settings, readings, board,
            TableSignals{loader_bell, housekeeper_bell, loads_queued, stopping}),
      retirer(config, table),
      queue(LoaderParts{config, models, factory, settings, table, retirer, defaults, readings,
                        board, loader_bell, loads_queued, stopping}),
      housekeeper(HousekeeperParts{config, models, settings, table, queue, retirer, defaults,
                                   readings, housekeeper_bell, stopping}) {}

RouterParts::~RouterParts() {
  shutdown();
}

void RouterParts::shutdown() {
  // call_once blocks concurrent callers until it is done, so a signal
  // thread and main may both call it.
  std::call_once(shutdown_once_, [this] { shutdown_now(); });
}

void RouterParts::shutdown_now() {
  stopping.store(true);
  queue.fail_queued();
  table.changed();  // requests waiting for a slot or a session's server see it
  housekeeper_bell.ring();
  queue.join();
  housekeeper.join();
  // Stop every backend at once, so shutdown takes one grace period, not N.
  retirer.stop_at_shutdown(table.take_all());
}

}  // namespace lemon
