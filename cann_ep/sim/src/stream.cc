// Streams (in-order queues, one worker thread each), events and synchronisation.
//
// ACLSIM_STREAM_DELAY_US (read at aclInit) makes each worker sleep that long before every
// queued operation, so a program that reads a result before synchronising sees stale data.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "internal.h"

namespace aclsim {
namespace {

struct Item {
  std::string label;
  Task task;
  uint64_t seq = 0;  // 1-based position in the stream's submission order
};

class Stream {
 public:
  explicit Stream(int id) : id_(id), worker_([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  int id() const { return id_; }

  // Queues `task`; returns its position in submission order.
  uint64_t push(std::string label, Task task) {
    uint64_t seq;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seq = ++submitted_;
      queue_.push_back(Item{std::move(label), std::move(task), seq});
    }
    cv_.notify_all();
    return seq;
  }

  // Waits for everything submitted so far; returns (and clears) the first async error.
  TaskResult wait(bool take_error) {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t target = submitted_;
    done_cv_.wait(lock, [&] { return completed_ >= target; });
    TaskResult r;
    if (take_error) std::swap(r, error_);
    return r;
  }

  // Returns (and clears) the first async error if it came from a task queued before position `seq`
  // (an event recorded at `seq` has been reached once everything before it ran).
  TaskResult take_error_before(uint64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    TaskResult r;
    if (error_.code != ACL_SUCCESS && error_seq_ < seq) std::swap(r, error_);
    return r;
  }

 private:
  void run() {
    int64_t delay = stream_delay_us();
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stop requested and drained
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      if (delay > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay));
      TaskResult r = item.task();
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (r.code != ACL_SUCCESS && error_.code == ACL_SUCCESS) {
          error_ = r;
          error_.message = "stream " + std::to_string(id_) + ": " + item.label + ": " + r.message;
          error_seq_ = item.seq;
        }
        ++completed_;
      }
      done_cv_.notify_all();
    }
  }

  int id_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<Item> queue_;
  uint64_t submitted_ = 0, completed_ = 0;
  bool stop_ = false;
  TaskResult error_;
  uint64_t error_seq_ = 0;  // position of the task that set error_
  std::thread worker_;      // last: starts after the other members exist
};

struct Event {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;         // number of aclrtRecordEvent calls
  uint64_t completed = 0;        // highest recording that has been reached on its stream
  std::weak_ptr<Stream> stream;  // where the last recording was queued
  uint64_t stream_seq = 0;       // and its position there
};

struct Registry {
  std::mutex mu;
  std::map<void*, std::shared_ptr<Stream>> streams;
  std::shared_ptr<Stream> default_stream;
  std::map<void*, std::shared_ptr<Event>> events;
  int next_id = 1;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed (exit-time calls)
  return *r;
}

std::shared_ptr<Stream> find_stream(aclrtStream s) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (s == nullptr) {
    if (!r.default_stream) r.default_stream = std::make_shared<Stream>(0);
    return r.default_stream;
  }
  auto it = r.streams.find(s);
  return it == r.streams.end() ? nullptr : it->second;
}

std::shared_ptr<Event> find_event(aclrtEvent e) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.events.find(e);
  return it == r.events.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Stream>> all_streams() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::shared_ptr<Stream>> v;
  if (r.default_stream) v.push_back(r.default_stream);
  for (auto& kv : r.streams) v.push_back(kv.second);
  return v;
}

aclError report(const TaskResult& r) { return r.code == ACL_SUCCESS ? ACL_SUCCESS : fail_msg(r.code, r.message); }

aclError bad_stream(const char* api, aclrtStream s) {
  return fail(ACL_ERROR_INVALID_PARAM, "%s: stream %p was not created by aclrtCreateStream (or was destroyed)", api, s);
}

}  // namespace

bool stream_valid(aclrtStream s) { return find_stream(s) != nullptr; }

aclError enqueue(aclrtStream s, const std::string& label, Task task) {
  auto st = find_stream(s);
  if (!st) return bad_stream(label.c_str(), s);
  st->push(label, std::move(task));
  return ACL_SUCCESS;
}

void wait_stream(aclrtStream s) {
  if (auto st = find_stream(s)) st->wait(false);
}

aclError synchronize_all() {
  aclError first = ACL_SUCCESS;
  for (auto& st : all_streams()) {
    aclError rc = report(st->wait(true));
    if (first == ACL_SUCCESS) first = rc;
  }
  return first;
}

void wait_all_idle() {
  for (auto& st : all_streams()) st->wait(false);
}

void destroy_all_streams() {
  Registry& r = registry();
  std::map<void*, std::shared_ptr<Stream>> streams;
  std::shared_ptr<Stream> def;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    streams.swap(r.streams);
    def.swap(r.default_stream);
    r.events.clear();
  }
  if (!streams.empty()) warn("aclFinalize: %zu stream(s) were not destroyed with aclrtDestroyStream", streams.size());
  for (auto& kv : streams) report(kv.second->wait(true));
  if (def) report(def->wait(true));
}

}  // namespace aclsim

using aclsim::find_event;
using aclsim::find_stream;

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) return aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is NULL");
  if (!aclsim::initialized())
    return aclsim::fail(ACL_ERROR_UNINITIALIZE, "aclrtCreateStream: aclInit has not been called");
  aclsim::Registry& r = aclsim::registry();
  std::shared_ptr<aclsim::Stream> st;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    st = std::make_shared<aclsim::Stream>(r.next_id++);
    r.streams[st.get()] = st;
  }
  *stream = st.get();
  ACLSIM_TRACE("aclrtCreateStream() = 0, *stream=%p (stream %d)", *stream, st->id());
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream) {
  aclsim::Registry& r = aclsim::registry();
  std::shared_ptr<aclsim::Stream> st;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.streams.find(stream);
    if (it != r.streams.end()) {
      st = it->second;
      r.streams.erase(it);
    }
  }
  aclError rc = st ? aclsim::report(st->wait(true)) : aclsim::bad_stream("aclrtDestroyStream", stream);
  ACLSIM_TRACE("aclrtDestroyStream(stream=%p) = %d", stream, rc);
  return rc;  // the worker thread is joined when the last reference goes away
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream) {
  aclsim::stat_add(aclsim::kStreamSyncs, 1);
  auto st = find_stream(stream);
  aclError rc = st ? aclsim::report(st->wait(true)) : aclsim::bad_stream("aclrtSynchronizeStream", stream);
  ACLSIM_TRACE("aclrtSynchronizeStream(stream=%p) = %d", stream, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void) {
  aclsim::stat_add(aclsim::kStreamSyncs, 1);
  aclError rc = aclsim::synchronize_all();
  ACLSIM_TRACE("aclrtSynchronizeDevice() = %d", rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent* event) {
  if (event == nullptr) return aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is NULL");
  aclsim::Registry& r = aclsim::registry();
  auto ev = std::make_shared<aclsim::Event>();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.events[ev.get()] = ev;
  }
  *event = ev.get();
  ACLSIM_TRACE("aclrtCreateEvent() = 0, *event=%p", *event);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event) {
  aclsim::Registry& r = aclsim::registry();
  size_t erased;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    erased = r.events.erase(event);
  }
  aclError rc =
      erased ? ACL_SUCCESS : aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: unknown event %p", event);
  ACLSIM_TRACE("aclrtDestroyEvent(event=%p) = %d", event, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  auto ev = find_event(event);
  aclError rc;
  if (!ev) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: unknown event %p", event);
  } else {
    auto st = find_stream(stream);
    if (!st) {
      rc = aclsim::bad_stream("aclrtRecordEvent", stream);
    } else {
      // Under the event's lock (the worker takes no stream lock while it runs the task below), so
      // `recorded`, `stream` and `stream_seq` always describe the same, latest recording.
      std::lock_guard<std::mutex> lock(ev->mu);
      uint64_t gen = ++ev->recorded;
      ev->stream_seq = st->push("aclrtRecordEvent", [ev, gen] {
        {
          std::lock_guard<std::mutex> task_lock(ev->mu);
          if (ev->completed < gen) ev->completed = gen;
        }
        ev->cv.notify_all();
        return aclsim::TaskResult{};
      });
      ev->stream = st;
      rc = ACL_SUCCESS;
    }
  }
  ACLSIM_TRACE("aclrtRecordEvent(event=%p, stream=%p) = %d", event, stream, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  auto ev = find_event(event);
  aclError rc;
  if (!ev) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent: unknown event %p", event);
  } else {
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(ev->mu);
      target = ev->recorded;
    }
    rc = aclsim::enqueue(stream, "aclrtStreamWaitEvent", [ev, target] {
      std::unique_lock<std::mutex> lock(ev->mu);
      ev->cv.wait(lock, [&] { return ev->completed >= target; });
      return aclsim::TaskResult{};
    });
  }
  ACLSIM_TRACE("aclrtStreamWaitEvent(stream=%p, event=%p) = %d", stream, event, rc);
  return rc;
}

ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event) {
  auto ev = find_event(event);
  aclError rc = ACL_SUCCESS;
  if (!ev) {
    rc = aclsim::fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeEvent: unknown event %p", event);
  } else {
    std::shared_ptr<aclsim::Stream> st;
    uint64_t seq;
    {
      std::unique_lock<std::mutex> lock(ev->mu);
      uint64_t target = ev->recorded;
      ev->cv.wait(lock, [&] { return ev->completed >= target; });
      st = ev->stream.lock();
      seq = ev->stream_seq;
    }
    // A fault of an op queued before the recording is reported here (once), as a stream sync would.
    if (st) rc = aclsim::report(st->take_error_before(seq));
  }
  ACLSIM_TRACE("aclrtSynchronizeEvent(event=%p) = %d", event, rc);
  return rc;
}

}  // extern "C"
