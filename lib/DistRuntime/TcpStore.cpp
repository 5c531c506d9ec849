//===- TcpStore.cpp - A TCP key-value store for Gloo's rendezvous ---------===//
//
// Part of the moe-mlir project.
//
// See TcpStore.h for the protocol. Sockets are non-blocking; every wait is a
// poll(2) bounded by the caller's deadline, and EINTR restarts it.
//
//===----------------------------------------------------------------------===//

#include "TcpStore.h"

#include <gloo/common/error.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace moe::dist {
namespace {

// Bounds of what a peer may send; the rendezvous moves a few hundred bytes.
constexpr uint32_t kMaxKey = 1024;
constexpr uint32_t kMaxValue = 64u << 20;

[[noreturn]] void fail(const std::string &message) {
  throw gloo::IoException(message);
}

std::string errnoText(int error) { return std::strerror(error); }

std::string seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", ms.count() / 1000.0);
  return text;
}

void putU32(std::vector<char> &out, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint32_t getU32(const char *data) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= static_cast<uint32_t>(static_cast<unsigned char>(data[i]))
             << (8 * i);
  return value;
}

void putBytes(std::vector<char> &out, const char *data, size_t size) {
  putU32(out, static_cast<uint32_t>(size));
  out.insert(out.end(), data, data + size);
}

void closeFd(int &fd) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

void setNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    fail("fcntl(O_NONBLOCK): " + errnoText(errno));
}

// Milliseconds left until `end`, at least 0, for poll(2).
int remainingMs(std::chrono::steady_clock::time_point end) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  end - std::chrono::steady_clock::now())
                  .count();
  if (left <= 0)
    return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

// Waits until `fd` has `events`; false at the deadline.
bool waitFor(int fd, short events, std::chrono::steady_clock::time_point end) {
  while (true) {
    pollfd entry{fd, events, 0};
    int timeoutMs = remainingMs(end);
    int ready = ::poll(&entry, 1, timeoutMs);
    if (ready > 0)
      return true;
    if (ready == 0)
      return false;
    if (errno != EINTR)
      fail("poll: " + errnoText(errno));
  }
}

void sendAll(int fd, const char *data, size_t size,
             std::chrono::steady_clock::time_point end,
             const std::string &what) {
  while (size > 0) {
    ssize_t sent = ::send(fd, data, size, MSG_NOSIGNAL);
    if (sent > 0) {
      data += sent;
      size -= static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR)
      continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(fd, POLLOUT, end))
        fail("timed out sending " + what + " to the store");
      continue;
    }
    fail("sending " + what + " to the store: " + errnoText(errno));
  }
}

void recvAll(int fd, char *data, size_t size,
             std::chrono::steady_clock::time_point end,
             const std::string &what) {
  while (size > 0) {
    ssize_t got = ::recv(fd, data, size, 0);
    if (got > 0) {
      data += got;
      size -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0)
      fail("the store (rank 0) closed the connection while this rank waited "
           "for " +
           what);
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitFor(fd, POLLIN, end))
        fail("timed out waiting for " + what);
      continue;
    }
    fail("receiving " + what + " from the store: " + errnoText(errno));
  }
}

// One client connection of the server thread.
struct Peer {
  int fd = -1;
  int rank = -1;
  std::vector<char> in;
  std::vector<char> out;
  // The key of a `get` that waits for a `set`; empty when none.
  std::string pendingKey;
  bool waiting = false;
};

} // namespace

TcpStore::TcpStore(const std::string &host, int port, int rank, int worldSize,
                   std::chrono::milliseconds timeout)
    : rank(rank), worldSize(worldSize), timeout(timeout) {
  const auto end = Clock::now() + timeout;
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *found = nullptr;
  int status =
      ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (status != 0)
    fail("cannot resolve MASTER_ADDR '" + host +
         "': " + ::gai_strerror(status));
  std::unique_ptr<addrinfo, void (*)(addrinfo *)> list(found, ::freeaddrinfo);

  if (rank == 0) {
    // Listen on every interface of MASTER_ADDR's address family.
    int family = found->ai_family;
    listenFd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listenFd < 0)
      fail("socket: " + errnoText(errno));
    int one = 1;
    ::setsockopt(listenFd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage address{};
    socklen_t length;
    if (family == AF_INET6) {
      auto *v6 = reinterpret_cast<sockaddr_in6 *>(&address);
      v6->sin6_family = AF_INET6;
      v6->sin6_addr = in6addr_any;
      v6->sin6_port = htons(static_cast<uint16_t>(port));
      length = sizeof(sockaddr_in6);
    } else {
      auto *v4 = reinterpret_cast<sockaddr_in *>(&address);
      v4->sin_family = AF_INET;
      v4->sin_addr.s_addr = htonl(INADDR_ANY);
      v4->sin_port = htons(static_cast<uint16_t>(port));
      length = sizeof(sockaddr_in);
    }
    if (::bind(listenFd, reinterpret_cast<sockaddr *>(&address), length) < 0) {
      int error = errno;
      closeFd(listenFd);
      if (error == EADDRINUSE)
        fail("MASTER_PORT " + std::to_string(port) +
             " is in use (EADDRINUSE); choose a free port");
      fail("bind to MASTER_PORT " + std::to_string(port) + ": " +
           errnoText(error));
    }
    if (::listen(listenFd, 128) < 0) {
      int error = errno;
      closeFd(listenFd);
      fail("listen on MASTER_PORT " + std::to_string(port) + ": " +
           errnoText(error));
    }
    setNonBlocking(listenFd);
    int pipeFds[2];
    if (::pipe2(pipeFds, O_CLOEXEC | O_NONBLOCK) < 0) {
      closeFd(listenFd);
      fail("pipe: " + errnoText(errno));
    }
    wakeRead = pipeFds[0];
    wakeWrite = pipeFds[1];
    server = std::thread([this] { serve(); });
    return;
  }

  // Others: connect, retrying while rank 0 is not listening yet.
  std::string lastError = "no address";
  while (true) {
    for (addrinfo *entry = found; entry; entry = entry->ai_next) {
      int candidate =
          ::socket(entry->ai_family, entry->ai_socktype | SOCK_CLOEXEC, 0);
      if (candidate < 0) {
        lastError = "socket: " + errnoText(errno);
        continue;
      }
      setNonBlocking(candidate);
      int result = ::connect(candidate, entry->ai_addr, entry->ai_addrlen);
      int error = result == 0 ? 0 : errno;
      if (error == EINPROGRESS || error == EINTR) {
        // At most one second per attempt, so that a refused or lost SYN is
        // retried; the whole loop is bounded by `end`.
        auto attemptEnd = std::min(end, Clock::now() + std::chrono::seconds(1));
        if (waitFor(candidate, POLLOUT, attemptEnd)) {
          socklen_t size = sizeof(error);
          if (::getsockopt(candidate, SOL_SOCKET, SO_ERROR, &error, &size) < 0)
            error = errno;
        } else {
          error = ETIMEDOUT;
        }
      }
      if (error == 0) {
        fd = candidate;
        break;
      }
      lastError = errnoText(error);
      ::close(candidate);
    }
    if (fd >= 0)
      break;
    if (Clock::now() >= end)
      fail("timed out after " + seconds(timeout) +
           " connecting to the store of rank 0 at " + where +
           " (last error: " + lastError + "; did rank 0 start?)");
    ::usleep(100 * 1000);
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

  std::vector<char> hello{'H'};
  putU32(hello, static_cast<uint32_t>(rank));
  putU32(hello, static_cast<uint32_t>(worldSize));
  sendAll(fd, hello.data(), hello.size(), end, "the hello");
  char status4[4];
  recvAll(fd, status4, 4, end, "the store's answer to the hello");
  uint32_t length = getU32(status4);
  if (length != 0) {
    if (length > kMaxKey)
      fail("malformed answer of the store at " + where);
    std::string text(length, '\0');
    recvAll(fd, text.data(), length, end, "the store's answer to the hello");
    fail("the store at " + where + " refused this rank: " + text);
  }
}

TcpStore::~TcpStore() { shutdown(); }

void TcpStore::closeClient() { closeFd(fd); }

void TcpStore::shutdown() {
  closeFd(fd);
  if (server.joinable()) {
    char byte = 'q';
    stopping = true;
    while (::write(wakeWrite, &byte, 1) < 0 && errno == EINTR) {
    }
    server.join();
  }
  closeFd(listenFd);
  closeFd(wakeRead);
  closeFd(wakeWrite);
}

void TcpStore::request(const std::vector<char> &message,
                       std::vector<char> *reply, Clock::time_point end,
                       const std::string &what) {
  if (fd < 0)
    fail("the store connection of this rank is closed");
  sendAll(fd, message.data(), message.size(), end, what);
  char length4[4];
  recvAll(fd, length4, 4, end, what);
  uint32_t length = getU32(length4);
  if (length > kMaxValue)
    fail("malformed answer of the store (" + std::to_string(length) +
         " bytes) for " + what);
  std::vector<char> value(length);
  if (length)
    recvAll(fd, value.data(), length, end, what);
  if (reply)
    *reply = std::move(value);
}

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  if (key.size() > kMaxKey || data.size() > kMaxValue)
    fail("store key '" + key + "' or its value is too long");
  if (rank == 0) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      keys[key] = data;
    }
    keySet.notify_all();
    // Lets the server thread answer the gets that wait for this key.
    char byte = 'k';
    while (::write(wakeWrite, &byte, 1) < 0 && errno == EINTR) {
    }
    return;
  }
  std::vector<char> message{'S'};
  putBytes(message, key.data(), key.size());
  putBytes(message, data.data(), data.size());
  request(message, nullptr, Clock::now() + timeout,
          "the store's answer to setting key '" + key + "'");
}

std::vector<char> TcpStore::getUntil(const std::string &key,
                                     Clock::time_point end) {
  if (key.size() > kMaxKey)
    fail("store key '" + key + "' is too long");
  // Gloo's keys are "<rank>" and "rank_<rank>", under "ep<g>/" for the
  // ranks of expert-parallel group g: name the rank that sets it.
  auto isNumber = [](const std::string &text) {
    return !text.empty() && text.size() < 8 &&
           text.find_first_not_of("0123456789") == std::string::npos;
  };
  std::string group, digits = key;
  size_t slash = key.find('/');
  if (key.rfind("ep", 0) == 0 && slash != std::string::npos &&
      isNumber(key.substr(2, slash - 2))) {
    group = key.substr(2, slash - 2);
    digits = key.substr(slash + 1);
  }
  if (digits.rfind("rank_", 0) == 0)
    digits = digits.substr(5);
  const std::string what =
      !isNumber(digits) ? "store key '" + key + "' (set by another rank)"
      : group.empty()   ? "rank " + digits + " (store key '" + key + "')"
                        : "rank " + digits + " of EP group " + group +
                              " (store key '" + key + "')";
  if (rank == 0) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!keySet.wait_until(lock, end, [&] { return keys.count(key) != 0; }))
      fail("timed out after " + seconds(timeout) + " waiting for " + what +
           "; did every rank start?");
    return keys[key];
  }
  std::vector<char> message{'G'};
  putBytes(message, key.data(), key.size());
  std::vector<char> value;
  request(message, &value, end, what);
  return value;
}

std::vector<char> TcpStore::get(const std::string &key) {
  return getUntil(key, Clock::now() + timeout);
}

void TcpStore::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout);
}

void TcpStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &waitTimeout) {
  auto end = Clock::now() + waitTimeout;
  for (const std::string &key : keys)
    getUntil(key, end);
}

void TcpStore::serve() {
  std::vector<Peer> peers;
  int closedRanks = 0;
  auto drop = [&](size_t index) {
    if (peers[index].rank > 0)
      ++closedRanks;
    ::close(peers[index].fd);
    peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(index));
  };
  auto answer = [](Peer &peer, const char *data, size_t size) {
    putBytes(peer.out, data, size);
  };
  // Parses the complete requests in peer.in; false on a protocol error.
  auto handle = [&](Peer &peer) {
    size_t used = 0;
    bool ok = true;
    while (!peer.waiting && used < peer.in.size()) {
      const char *data = peer.in.data() + used;
      size_t available = peer.in.size() - used;
      char op = data[0];
      if (op == 'H') {
        if (available < 9)
          break;
        uint32_t helloRank = getU32(data + 1);
        uint32_t helloWorld = getU32(data + 5);
        used += 9;
        std::string refusal;
        if (helloWorld != static_cast<uint32_t>(worldSize))
          refusal = "rank 0 has world size " + std::to_string(worldSize) +
                    ", this rank " + std::to_string(helloWorld);
        else if (helloRank == 0 || helloRank >= helloWorld)
          refusal = "rank " + std::to_string(helloRank) + " is out of range";
        else
          for (const Peer &other : peers)
            if (other.rank == static_cast<int>(helloRank))
              refusal = "another process is rank " + std::to_string(helloRank);
        if (!refusal.empty()) {
          answer(peer, refusal.data(), refusal.size());
          continue;
        }
        peer.rank = static_cast<int>(helloRank);
        answer(peer, nullptr, 0);
        continue;
      }
      if ((op != 'S' && op != 'G') || peer.rank < 0) {
        ok = false;
        break;
      }
      if (available < 5)
        break;
      uint32_t keyLength = getU32(data + 1);
      if (keyLength > kMaxKey) {
        ok = false;
        break;
      }
      if (available < 5 + keyLength)
        break;
      std::string key(data + 5, keyLength);
      if (op == 'G') {
        used += 5 + keyLength;
        peer.pendingKey = key;
        peer.waiting = true;
        break;
      }
      if (available < 9 + keyLength)
        break;
      uint32_t valueLength = getU32(data + 5 + keyLength);
      if (valueLength > kMaxValue) {
        ok = false;
        break;
      }
      if (available < 9 + static_cast<size_t>(keyLength) + valueLength)
        break;
      const char *value = data + 9 + keyLength;
      {
        std::lock_guard<std::mutex> lock(mutex);
        keys[key] = std::vector<char>(value, value + valueLength);
      }
      keySet.notify_all();
      used += 9 + static_cast<size_t>(keyLength) + valueLength;
      answer(peer, nullptr, 0);
    }
    peer.in.erase(peer.in.begin(),
                  peer.in.begin() + static_cast<std::ptrdiff_t>(used));
    return ok;
  };
  // Answers the gets whose key is set by now.
  auto answerWaiting = [&] {
    bool answered = false;
    std::lock_guard<std::mutex> lock(mutex);
    for (Peer &peer : peers) {
      if (!peer.waiting)
        continue;
      auto found = keys.find(peer.pendingKey);
      if (found == keys.end())
        continue;
      answer(peer, found->second.data(), found->second.size());
      peer.waiting = false;
      peer.pendingKey.clear();
      answered = true;
    }
    return answered;
  };

  try {
    while (!stopping) {
      // Every other rank said hello and left: the rendezvous is over.
      if (closedRanks >= worldSize - 1)
        break;
      std::vector<pollfd> entries;
      entries.push_back({wakeRead, POLLIN, 0});
      entries.push_back({listenFd, POLLIN, 0});
      for (const Peer &peer : peers)
        entries.push_back(
            {peer.fd,
             static_cast<short>(POLLIN | (peer.out.empty() ? 0 : POLLOUT)), 0});
      int ready = ::poll(entries.data(), entries.size(), -1);
      if (ready < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      if (entries[0].revents) {
        char drain[64];
        while (::read(wakeRead, drain, sizeof(drain)) > 0) {
        }
      }
      if (entries[1].revents & POLLIN) {
        int client =
            ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (client >= 0) {
          int one = 1;
          ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          peers.emplace_back();
          peers.back().fd = client;
        }
      }
      // Peers past entries' end were accepted in this round.
      size_t polled = entries.size() - 2;
      for (size_t i = polled; i-- > 0;) {
        Peer &peer = peers[i];
        short events = entries[i + 2].revents;
        bool keep = true;
        if (events & (POLLIN | POLLHUP | POLLERR)) {
          char buffer[4096];
          while (true) {
            ssize_t got = ::recv(peer.fd, buffer, sizeof(buffer), 0);
            if (got > 0) {
              peer.in.insert(peer.in.end(), buffer, buffer + got);
              if (peer.in.size() > kMaxValue + 2 * kMaxKey) {
                keep = false;
                break;
              }
              continue;
            }
            if (got < 0 && errno == EINTR)
              continue;
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
              break;
            keep = false; // closed or failed
            break;
          }
        }
        if (!keep) {
          drop(i);
          continue;
        }
      }
      // Parses what arrived; an answered get unblocks the requests queued
      // behind it, and a set may answer the gets of other peers.
      do {
        for (size_t i = peers.size(); i-- > 0;)
          if (!handle(peers[i]))
            drop(i);
      } while (answerWaiting());
      for (Peer &peer : peers) {
        while (!peer.out.empty()) {
          ssize_t sent =
              ::send(peer.fd, peer.out.data(), peer.out.size(), MSG_NOSIGNAL);
          if (sent > 0) {
            peer.out.erase(peer.out.begin(), peer.out.begin() + sent);
            continue;
          }
          if (sent < 0 && errno == EINTR)
            continue;
          if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            peer.out.clear(); // the peer is gone; recv sees it next round
          break;
        }
      }
    }
  } catch (...) {
    // Out of memory: stop serving; the clients time out with a clear error.
  }
  for (Peer &peer : peers)
    ::close(peer.fd);
}

} // namespace moe::dist
