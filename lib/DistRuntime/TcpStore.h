//===- TcpStore.h - A TCP key-value store for Gloo's rendezvous -*- C++ -*-===//
//
// Part of the moe-mlir project.
//
// Gloo 2022 (Debian's libgloo-dev) has no TCP store, only file, hash, prefix
// and Redis stores, so the rendezvous of the ranks uses this one: rank 0
// serves the keys on MASTER_PORT from a background thread and uses them
// directly; every other rank connects to MASTER_ADDR:MASTER_PORT, retrying
// until the timeout since rank 0 may start later.
//
// Protocol (all integers little-endian u32, every length checked):
//   hello: client -> 'H' rank worldSize; server -> status (0 = accepted, else
//          the length of an error text that follows)
//   set:   client -> 'S' keyLen key valueLen value; server -> 0
//   get:   client -> 'G' keyLen key; server, once the key is set ->
//          valueLen value
// `wait` is a `get` of each key with the values dropped. Every client call
// fails with gloo::IoException after the timeout. A client may close its
// connection once connectFullMesh returned; the server thread ends once
// every rank has said hello and closed, or at shutdown().
//
//===----------------------------------------------------------------------===//

#ifndef MOE_DISTRUNTIME_TCPSTORE_H
#define MOE_DISTRUNTIME_TCPSTORE_H

#include <gloo/rendezvous/store.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moe::dist {

class TcpStore : public gloo::rendezvous::Store {
public:
  /// Rank 0: listens on `port` (all interfaces, SO_REUSEADDR) and starts the
  /// server thread. Others: connects to host:port and says hello. Throws
  /// gloo::IoException with a one-line message on failure.
  TcpStore(const std::string &host, int port, int rank, int worldSize,
           std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

  /// Closes this rank's connection (clients); the server keeps serving.
  void closeClient();
  /// Stops the server thread (rank 0) and closes every socket.
  void shutdown();

private:
  using Clock = std::chrono::steady_clock;

  std::vector<char> getUntil(const std::string &key, Clock::time_point end);
  void request(const std::vector<char> &message, std::vector<char> *reply,
               Clock::time_point end, const std::string &what);
  void serve();

  int rank;
  int worldSize;
  std::chrono::milliseconds timeout;

  // Client side.
  int fd = -1;

  // Server side (rank 0): the keys, guarded by `mutex`, and its thread.
  std::mutex mutex;
  std::condition_variable keySet;
  std::map<std::string, std::vector<char>> keys;
  int listenFd = -1;
  int wakeRead = -1, wakeWrite = -1;
  std::atomic<bool> stopping{false};
  std::thread server;
};

} // namespace moe::dist

#endif // MOE_DISTRUNTIME_TCPSTORE_H
