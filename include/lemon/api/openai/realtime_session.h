// One `/realtime` socket (Lemonade's realtime transcription, in OpenAI's
// Realtime event names): the audio a client appends, the voice activity
// detector over it (voice_activity.h), and the segments it sends to the
// model's whisper-server, one request (and one lease) each.
//
// Client events: session.update (model, turn_detection, or null to turn the
// detector off; transcription_session.update alike), input_audio_buffer.
// append (base64 PCM16, 16 kHz mono), input_audio_buffer.commit and
// input_audio_buffer.clear. Server events: session.created, session.updated,
// input_audio_buffer.speech_started / speech_stopped / committed / cleared,
// conversation.item.input_audio_transcription.delta (the whole interim
// text so far, every second of speech, as Lemonade sends it) and .completed,
// and error. docs/api.md has their fields.
//
// Threads: the socket thread calls on_message() (decoding, detection,
// events; never a transcription); transcriptions run in order on a thread
// the backend gives (RealtimeBackend::run), which sends their results.
//
// Thread-safety: as above; the job queue is under the session's lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/api/openai/voice_activity.h"
#include "lemon/core/error.h"
#include "lemon/core/mutex.h"
#include "lemon/http/json_socket.h"

namespace lemon::api {

// What a session needs of the room that opened it.
class RealtimeBackend {
 public:
  virtual ~RealtimeBackend() = default;
  // Transcribes `wav` (a WAV file in memory) with `model` for `key`: the
  // text, or why not. `cancelled()` turns true once the session has ended.
  virtual Result<std::string> transcribe(const std::string& model, const http::ApiKey* key,
                                         std::string wav,
                                         const std::function<bool()>& cancelled) = 0;
  // Runs `work` on a thread of the room's (never the socket thread).
  virtual void run(std::function<void()> work) = 0;
  // The refusal of `model` for `key` (outside its list), or nullopt.
  virtual std::optional<Error> refuse_model(const http::ApiKey* key, const std::string& model) = 0;
};

class RealtimeSession final : public http::JsonSocketHandler,
                              public std::enable_shared_from_this<RealtimeSession> {
 public:
  static constexpr int kSampleRate = VoiceActivityDetector::kSampleRate;
  // Audio kept before a speech start and after its end in the segment sent.
  static constexpr int kPreRollMs = 300;
  static constexpr int kTailMs = 300;
  // Segments shorter than this are padded with silence (whisper needs it).
  static constexpr int kMinSegmentMs = 500;
  // During speech, an interim transcription of the segment so far every
  // this much new audio, one at a time.
  static constexpr int kInterimEveryMs = 1000;
  // Speech longer than this is cut into segments.
  static constexpr int kMaxSpeechSeconds = 60;
  // With the detector off, what the buffer holds until a commit.
  static constexpr int kMaxBufferSeconds = 120;

  // `model` from ?model= ("" until a session.update names one), `id` the
  // session's ("sess_" and hex).
  RealtimeSession(RealtimeBackend& backend, http::SocketCaller caller, std::string model,
                  std::string id);

  void on_open(const std::shared_ptr<http::JsonSocket>& socket) override;
  void on_message(const std::string& type, const nlohmann::json& message) override;
  void on_closed() override;

 private:
  struct Job {
    std::uint64_t generation = 0;  // the buffer's, when it was made
    std::string item_id;
    bool interim = false;
    std::string model;
    std::vector<std::int16_t> audio;
  };

  nlohmann::json session_json() const;
  void send(nlohmann::json event);
  void update(const nlohmann::json& message, bool transcription_session);
  void append(const nlohmann::json& message);
  void commit();
  void clear();
  // The audio of the buffer from stream sample `from` to `to`.
  std::vector<std::int16_t> slice(std::uint64_t from, std::uint64_t to) const;
  void queue(Job job);
  void drain();
  void run_job(const Job& job);
  // Drops the buffer's audio before stream sample `keep_from`.
  void trim(std::uint64_t keep_from);
  std::string next_item_id();

  RealtimeBackend& backend_;
  const http::SocketCaller caller_;
  const std::string id_;
  std::shared_ptr<http::JsonSocket> socket_;

  // The socket thread's alone.
  std::string model_;
  bool vad_on_ = true;
  VoiceActivityDetector vad_;
  std::vector<std::int16_t> buffer_;
  std::uint64_t buffer_start_ = 0;   // the stream sample buffer_[0] is
  std::uint64_t segment_start_ = 0;  // where the current speech's segment begins
  std::uint64_t last_interim_ = 0;   // the stream sample of the last interim's end
  std::string item_id_;              // the current speech's item
  std::uint64_t items_ = 0;
  std::atomic<std::uint64_t> events_{0};  // both threads send

  // Shared with the transcription thread.
  Mutex mu_;
  std::deque<Job> jobs_ LEMON_GUARDED_BY(mu_);
  bool draining_ LEMON_GUARDED_BY(mu_) = false;
  bool interim_pending_ LEMON_GUARDED_BY(mu_) = false;
  std::uint64_t generation_ LEMON_GUARDED_BY(mu_) = 0;
  bool closed_ LEMON_GUARDED_BY(mu_) = false;
};

}  // namespace lemon::api
