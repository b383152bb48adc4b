#include "lemon/api/openai/realtime_session.h"

#include <algorithm>
#include <tuple>

#include "lemon/api/openai/realtime_audio.h"
#include "lemon/net/websocket.h"

namespace lemon::api {
namespace {

constexpr std::uint64_t samples_of_ms(int ms) {
  return static_cast<std::uint64_t>(ms) * RealtimeSession::kSampleRate / 1000;
}

std::uint64_t ms_of_samples(std::uint64_t samples) {
  return samples * 1000 / RealtimeSession::kSampleRate;
}

constexpr const char* kTranscriptionDelta = "conversation.item.input_audio_transcription.delta";
constexpr const char* kTranscriptionCompleted =
    "conversation.item.input_audio_transcription.completed";

}  // namespace

RealtimeSession::RealtimeSession(RealtimeBackend& backend, http::SocketCaller caller,
                                 std::string model, std::string id)
    : backend_(backend), caller_(std::move(caller)), id_(std::move(id)), model_(std::move(model)) {}

nlohmann::json RealtimeSession::session_json() const {
  nlohmann::json turn_detection = nullptr;
  if (vad_on_) {
    const VadSettings& s = vad_.settings();
    turn_detection = {{"type", "server_vad"},
                      {"threshold", s.threshold},
                      {"silence_duration_ms", s.silence_duration_ms},
                      {"prefix_padding_ms", s.prefix_padding_ms}};
  }
  return {{"id", id_},
          {"object", "realtime.transcription_session"},
          {"model", model_},
          {"input_audio_format", "pcm16"},
          {"turn_detection", std::move(turn_detection)}};
}

void RealtimeSession::send(nlohmann::json event) {
  event["event_id"] = "event_" + std::to_string(events_.fetch_add(1) + 1);
  socket_->send(event);
}

void RealtimeSession::on_open(const std::shared_ptr<http::JsonSocket>& socket) {
  socket_ = socket;
  send({{"type", "session.created"}, {"session", session_json()}});
}

void RealtimeSession::on_message(const std::string& type, const nlohmann::json& message) {
  if (type == "input_audio_buffer.append") {
    append(message);
  } else if (type == "input_audio_buffer.commit") {
    commit();
  } else if (type == "input_audio_buffer.clear") {
    clear();
  } else if (type == "session.update" || type == "transcription_session.update") {
    update(message, type == "transcription_session.update");
  } else {
    socket_->send_error("Unknown message type: " + type);
  }
}

void RealtimeSession::on_closed() {
  MutexLock lock(mu_);
  closed_ = true;
  jobs_.clear();
}

void RealtimeSession::update(const nlohmann::json& message, bool transcription_session) {
  auto session = message.find("session");
  if (session == message.end() || !session->is_object()) {
    socket_->send_error("session.update needs a 'session' object");
    return;
  }
  std::optional<std::string> model;
  if (auto m = session->find("model"); m != session->end() && !m->is_null()) {
    if (!m->is_string()) {
      socket_->send_error("'session.model' must be a string");
      return;
    }
    model = m->get<std::string>();
  } else if (auto t = session->find("input_audio_transcription");
             t != session->end() && t->is_object() && t->contains("model") &&
             (*t)["model"].is_string()) {
    model = (*t)["model"].get<std::string>();  // OpenAI's transcription sessions name it here
  }
  if (model) {
    if (auto refused = backend_.refuse_model(caller_.key, *model)) {
      socket_->send_error(refused->message());
      return;
    }
  }
  std::optional<bool> vad_on;
  VadSettings settings = vad_.settings();
  if (auto td = session->find("turn_detection"); td != session->end()) {
    if (td->is_null()) {
      vad_on = false;
    } else if (!td->is_object()) {
      socket_->send_error("'session.turn_detection' must be an object or null");
      return;
    } else {
      vad_on = true;
      if (auto t = td->find("threshold"); t != td->end()) {
        if (!t->is_number() || t->get<double>() < 0.0 || t->get<double>() > 1.0) {
          socket_->send_error("'turn_detection.threshold' must be a number from 0 to 1");
          return;
        }
        settings.threshold = t->get<double>();
      }
      for (auto [field, target, least] :
           {std::tuple{"silence_duration_ms", &settings.silence_duration_ms, 1},
            std::tuple{"prefix_padding_ms", &settings.prefix_padding_ms, 0}}) {
        if (auto v = td->find(field); v != td->end()) {
          if (!v->is_number_integer() || v->get<long long>() < least ||
              v->get<long long>() > 60000) {
            socket_->send_error(std::string("'turn_detection.") + field +
                                "' must be whole milliseconds up to 60000");
            return;
          }
          *target = static_cast<int>(v->get<long long>());
        }
      }
    }
  }
  if (model) {
    model_ = *model;
  }
  if (vad_on) {
    if (*vad_on != vad_on_ || !*vad_on) {
      vad_.reset();
      item_id_.clear();
    }
    vad_on_ = *vad_on;
    vad_.set_settings(settings);
  }
  send({{"type", transcription_session ? "transcription_session.updated" : "session.updated"},
        {"session", session_json()}});
}

void RealtimeSession::append(const nlohmann::json& message) {
  auto audio = message.find("audio");
  if (audio == message.end() || !audio->is_string()) {
    socket_->send_error("input_audio_buffer.append needs 'audio': base64 PCM16, 16 kHz mono");
    return;
  }
  if (audio->get_ref<const std::string&>().empty()) {
    return;
  }
  auto samples = decode_pcm16_base64(audio->get_ref<const std::string&>());
  if (!samples) {
    socket_->send_error("'audio' is not base64");
    return;
  }
  if (!vad_on_ && buffer_.size() + samples->size() > samples_of_ms(kMaxBufferSeconds * 1000)) {
    socket_->send_error("the input audio buffer holds " + std::to_string(kMaxBufferSeconds) +
                        " s at most: commit or clear it");
    return;
  }
  buffer_.insert(buffer_.end(), samples->begin(), samples->end());
  if (!vad_on_) {
    vad_.feed(*samples);  // keeps the stream's sample count
    return;
  }
  for (const auto& event : vad_.feed(*samples)) {
    if (event.kind == VoiceActivityDetector::Event::Kind::kSpeechStarted) {
      item_id_ = next_item_id();
      segment_start_ =
          std::max(buffer_start_,
                   event.sample - std::min<std::uint64_t>(event.sample, samples_of_ms(kPreRollMs)));
      last_interim_ = event.sample;
      send({{"type", "input_audio_buffer.speech_started"},
            {"audio_start_ms", ms_of_samples(event.sample)},
            {"item_id", item_id_}});
      continue;
    }
    send({{"type", "input_audio_buffer.speech_stopped"},
          {"audio_end_ms", ms_of_samples(event.sample)},
          {"item_id", item_id_}});
    const std::uint64_t end = event.sample + samples_of_ms(kTailMs);
    queue({0, item_id_, false, model_, slice(segment_start_, end)});
    item_id_.clear();
  }
  const std::uint64_t now = vad_.samples_fed();
  if (vad_.speaking()) {
    if (now - segment_start_ >= samples_of_ms(kMaxSpeechSeconds * 1000)) {
      // Too long for one segment: this much is final, the rest starts anew.
      send({{"type", "input_audio_buffer.speech_stopped"},
            {"audio_end_ms", ms_of_samples(now)},
            {"item_id", item_id_}});
      queue({0, item_id_, false, model_, slice(segment_start_, now)});
      vad_.reset();
      item_id_.clear();
      trim(now);
      return;
    }
    if (now - last_interim_ >= samples_of_ms(kInterimEveryMs)) {
      bool idle = false;
      {
        MutexLock lock(mu_);
        idle = !interim_pending_;
      }
      if (idle) {
        last_interim_ = now;
        queue({0, item_id_, true, model_, slice(segment_start_, now)});
      }
    }
    return;
  }
  // Not speaking: only what a next speech's segment would start with is
  // worth keeping: its pre-roll, and the voiced frames the detector counts
  // before it calls them speech.
  const std::uint64_t keep = samples_of_ms(kPreRollMs + vad_.settings().prefix_padding_ms) +
                             VoiceActivityDetector::kFrameSamples;
  trim(now - std::min(now, keep));
}

void RealtimeSession::commit() {
  const std::uint64_t now = vad_.samples_fed();
  if (vad_on_ && !vad_.speaking()) {
    // Lemonade's rule: with the detector on and no speech under way, a
    // commit has nothing to transcribe; the buffer is cleared.
    clear();
    return;
  }
  const std::uint64_t from = vad_on_ ? segment_start_ : buffer_start_;
  if (now <= from) {
    socket_->send_error("the input audio buffer is empty: append audio before a commit");
    return;
  }
  const std::string item = item_id_.empty() ? next_item_id() : item_id_;
  send(
      {{"type", "input_audio_buffer.committed"}, {"item_id", item}, {"previous_item_id", nullptr}});
  queue({0, item, false, model_, slice(from, now)});
  vad_.reset();
  item_id_.clear();
  trim(now);
}

void RealtimeSession::clear() {
  {
    MutexLock lock(mu_);
    ++generation_;  // interim results on their way are for audio now gone
  }
  vad_.reset();
  item_id_.clear();
  trim(vad_.samples_fed());
  send({{"type", "input_audio_buffer.cleared"}});
}

std::vector<std::int16_t> RealtimeSession::slice(std::uint64_t from, std::uint64_t to) const {
  const std::uint64_t end = buffer_start_ + buffer_.size();
  from = std::clamp(from, buffer_start_, end);
  to = std::clamp(to, from, end);
  return {buffer_.begin() + static_cast<long>(from - buffer_start_),
          buffer_.begin() + static_cast<long>(to - buffer_start_)};
}

void RealtimeSession::trim(std::uint64_t keep_from) {
  if (keep_from <= buffer_start_) {
    return;
  }
  const std::uint64_t drop = std::min<std::uint64_t>(keep_from - buffer_start_, buffer_.size());
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<long>(drop));
  buffer_start_ += drop;
}

std::string RealtimeSession::next_item_id() {
  return "item_" + id_.substr(std::min<std::size_t>(5, id_.size()), 12) + "_" +
         std::to_string(++items_);
}

void RealtimeSession::queue(Job job) {
  bool start = false;
  {
    MutexLock lock(mu_);
    if (closed_) {
      return;
    }
    job.generation = generation_;
    if (job.interim) {
      interim_pending_ = true;
    }
    jobs_.push_back(std::move(job));
    start = !draining_;
    draining_ = true;
  }
  if (start) {
    backend_.run([self = shared_from_this()] { self->drain(); });
  }
}

void RealtimeSession::drain() {
  for (;;) {
    Job job;
    {
      MutexLock lock(mu_);
      if (jobs_.empty() || closed_) {
        draining_ = false;
        return;
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    run_job(job);
  }
}

void RealtimeSession::run_job(const Job& job) {
  auto stale = [this, &job] {
    MutexLock lock(mu_);
    return closed_ || (job.interim && job.generation != generation_);
  };
  Result<std::string> text = Error(ErrorCode::kInvalidRequest, "");
  if (job.model.empty()) {
    text = Error(ErrorCode::kInvalidRequest,
                 "no model: connect with ?model=<name> or send session.update with "
                 "session.model");
  } else {
    text = backend_.transcribe(job.model, caller_.key,
                               pcm16_wav(job.audio, kSampleRate, samples_of_ms(kMinSegmentMs)),
                               [this] {
                                 MutexLock lock(mu_);
                                 return closed_;
                               });
  }
  const bool drop = stale();
  if (job.interim) {
    MutexLock lock(mu_);
    interim_pending_ = false;
  }
  if (drop || (job.interim && !text.ok())) {
    return;  // a failed interim is followed by its final, which reports
  }
  if (!text.ok()) {
    socket_->send_error("Transcription failed: " + text.error().message(), "transcription_error");
    return;
  }
  if (job.interim) {
    send({{"type", kTranscriptionDelta},
          {"item_id", job.item_id},
          {"content_index", 0},
          {"delta", *text}});
    return;
  }
  send({{"type", kTranscriptionCompleted},
        {"item_id", job.item_id},
        {"content_index", 0},
        {"transcript", *text}});
}

}  // namespace lemon::api
