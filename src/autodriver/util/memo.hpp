#pragma once
// A process-wide table of answers computed once per key (what the kernel's drivers say about a
// callee is read once per run), safe to use from several threads. Two threads asking for the same
// new key may both compute it; the first answer stored is the one kept.

#include <map>
#include <mutex>
#include <string>

namespace autodriver::util {

template <class Value>
class Memo {
public:
  template <class Compute>
  Value get(const std::string& key, Compute&& compute) {
    {
      std::lock_guard lock(m_mutex);
      if (auto it = m_known.find(key); it != m_known.end()) return it->second;
    }
    Value v = compute();
    std::lock_guard lock(m_mutex);
    return m_known.emplace(key, std::move(v)).first->second;
  }

private:
  std::mutex m_mutex;
  std::map<std::string, Value> m_known;
};

} // namespace autodriver::util
