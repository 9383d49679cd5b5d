// One Bind on its way to the API server (KubeBinder::bind_async): what it will write, the
// reservation pods' reports it waits for, and its deadline. Internal to src/plugin_api/.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <httplib.h>

#include "plugin_api/kube_binder.hpp"

namespace fracpack::api {

struct KubeBinder::Pending {
  BindAnswer answer;
  std::string uid;
  BindDone done;
  std::map<std::string, std::string> annotations;  ///< what the Binding writes on the pod
  std::vector<std::string> groups;               ///< its GPU groups, for its label
  std::vector<std::string> devices;              ///< per claim: the GPU its reservation pod reported
  std::mutex mu;
  std::size_t missing = 0;                       ///< reports still awaited (under mu)
  std::vector<std::uint64_t> waiters;            ///< the book's when_reported ids (under mu)
  bool over = false;                             ///< done was called, or is being (under mu)
  bool said = false;                             ///< its failure is already in the log
  /// Its deadline, on a strand of its own: the timer is only touched there (asio timers are not
  /// thread-safe), so the report that beats it cancels it through the strand.
  std::optional<boost::asio::strand<boost::asio::thread_pool::executor_type>> strand;
  std::unique_ptr<boost::asio::steady_timer> deadline;
  std::atomic<std::size_t>* slot = nullptr;      ///< KubeBinder::waiting_, counted while set

  Pending(BindAnswer a, std::string u, BindDone d) : answer(std::move(a)), uid(std::move(u)), done(std::move(d)) {}
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  ~Pending() {
    if (slot != nullptr) --*slot;
  }
  /// The deadline will not fire (it is cancelled on its strand).
  void cancel_deadline() {
    boost::asio::post(*strand, [timer = deadline.get()] { timer->cancel(); });
  }
};

}  // namespace fracpack::api
