//===- PlanSimulator.cpp - host execution of collective plans -------------===//

#include "PlanSimulator.h"

#include <cstring>
#include <map>
#include <sstream>

namespace gdnrt::testing {
namespace {

struct Failure {
  std::string what;
};

std::vector<char> &bufferOf(RankMemory &memory, Buffer buffer) {
  switch (buffer) {
  case Buffer::Input:
    return memory.input;
  case Buffer::Input2:
    return memory.input2;
  case Buffer::Output:
    return memory.output;
  case Buffer::Workspace:
    return memory.workspace;
  case Buffer::Input3:
    return memory.input3;
  case Buffer::Output2:
    return memory.output2;
  case Buffer::Ones:
    return memory.ones;
  }
  throw Failure{"unknown buffer"};
}

/// `bytes` at `address`, bounds-checked.
char *at(RankMemory &memory, Address address, size_t bytes, int rank) {
  std::vector<char> &buffer = bufferOf(memory, address.buffer);
  if (address.offset + bytes > buffer.size()) {
    std::ostringstream os;
    os << "rank " << rank << " touches bytes [" << address.offset << ", "
       << address.offset + bytes << ") of buffer "
       << static_cast<int>(address.buffer) << " of " << buffer.size()
       << " bytes";
    throw Failure{os.str()};
  }
  return buffer.data() + address.offset;
}

template <typename T>
void gemm(RankMemory &memory, const BatchedGemm &g, int rank) {
  auto matrix = [&](Address base, size_t stride, int64_t b, int64_t elements) {
    return reinterpret_cast<T *>(
        at(memory, {base.buffer, base.offset + b * stride * sizeof(T)},
           elements * sizeof(T), rank));
  };
  for (int64_t b = 0; b < g.batch; ++b) {
    const T *a = matrix(g.a, g.strideA, b, g.m * g.k);
    const T *bm = matrix(g.b, g.strideB, b, g.k * g.n);
    // C is read only when accumulating (as cuBLASLt with beta = 0).
    const T *c = g.accumulate ? matrix(g.c, g.strideC, b, g.m * g.n) : nullptr;
    // A transposed is stored k x m, B transposed n x k.
    auto opA = [&](int64_t i, int64_t l) {
      return g.transposeA ? a[l * g.m + i] : a[i * g.k + l];
    };
    auto opB = [&](int64_t l, int64_t j) {
      return g.transposeB ? bm[j * g.k + l] : bm[l * g.n + j];
    };
    std::vector<T> result(g.m * g.n);
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        T sum = g.accumulate ? c[i * g.n + j] : T(0);
        for (int64_t l = 0; l < g.k; ++l)
          sum += opA(i, l) * opB(l, j);
        result[i * g.n + j] = sum;
      }
    std::memcpy(matrix(g.d, g.strideD, b, g.m * g.n), result.data(),
                result.size() * sizeof(T));
  }
}

void runLocal(const Step &step, RankMemory &memory, int rank) {
  switch (step.kind) {
  case Step::Copy: {
    const Copy2D &c = step.copy;
    if (c.width > c.dstPitch || c.width > c.srcPitch)
      throw Failure{"a copy is wider than its pitch"};
    for (size_t row = 0; row < c.height; ++row)
      std::memmove(at(memory, {c.dst.buffer, c.dst.offset + row * c.dstPitch},
                      c.width, rank),
                   at(memory, {c.src.buffer, c.src.offset + row * c.srcPitch},
                      c.width, rank),
                   c.width);
    break;
  }
  case Step::Zero:
    std::memset(at(memory, step.zero.dst, step.zero.bytes, rank), 0,
                step.zero.bytes);
    break;
  case Step::Gemm:
    if (step.gemm.dtype == GDN_F64)
      gemm<double>(memory, step.gemm, rank);
    else
      gemm<float>(memory, step.gemm, rank);
    break;
  case Step::Communicate:
    break;
  }
}

template <typename T>
void sumInto(std::vector<char> &sum, const char *data, size_t bytes) {
  T *total = reinterpret_cast<T *>(sum.data());
  const T *add = reinterpret_cast<const T *>(data);
  for (size_t i = 0; i < bytes / sizeof(T); ++i)
    total[i] += add[i];
}

/// Resolves group `index` of every rank (all sources are read before any
/// destination is written, as NCCL's buffers of one group do not overlap).
void communicate(const std::vector<const Group *> &groups,
                 std::vector<RankMemory> &ranks) {
  const int P = static_cast<int>(ranks.size());
  struct Write {
    int rank;
    Address address;
    std::vector<char> bytes;
  };
  std::vector<Write> writes;
  // Point to point: the k-th send from a to b meets the k-th receive at b
  // from a.
  std::map<std::pair<int, int>, std::vector<std::vector<char>>> sent;
  for (int r = 0; r < P; ++r)
    for (const Message &m : groups[r]->messages)
      if (m.kind == Message::Send) {
        if (m.peer < 0 || m.peer >= P)
          throw Failure{"a send to rank " + std::to_string(m.peer)};
        const char *data = at(ranks[r], m.buffer, m.bytes, r);
        sent[{r, m.peer}].emplace_back(data, data + m.bytes);
      }
  std::map<std::pair<int, int>, size_t> received;
  for (int r = 0; r < P; ++r)
    for (const Message &m : groups[r]->messages)
      if (m.kind == Message::Recv) {
        auto &queue = sent[{m.peer, r}];
        size_t &next = received[{m.peer, r}];
        if (next >= queue.size())
          throw Failure{"rank " + std::to_string(r) + " receives from rank " +
                        std::to_string(m.peer) + " more than it sends"};
        if (queue[next].size() != m.bytes)
          throw Failure{"a message of " + std::to_string(queue[next].size()) +
                        " bytes meets a receive of " + std::to_string(m.bytes)};
        at(ranks[r], m.buffer, m.bytes, r); // bounds
        writes.push_back({r, m.buffer, queue[next++]});
      }
  for (auto &[pair, queue] : sent)
    if (received[pair] != queue.size())
      throw Failure{"rank " + std::to_string(pair.first) + " sends to rank " +
                    std::to_string(pair.second) + " a message nobody receives"};
  // Collectives, matched by their position among the group's collectives.
  std::vector<std::vector<const Message *>> collectives(P);
  for (int r = 0; r < P; ++r)
    for (const Message &m : groups[r]->messages)
      if (m.kind != Message::Send && m.kind != Message::Recv)
        collectives[r].push_back(&m);
  for (int r = 1; r < P; ++r)
    if (collectives[r].size() != collectives[0].size())
      throw Failure{"ranks issue different numbers of collectives"};
  for (size_t c = 0; c < collectives[0].size(); ++c) {
    const Message &first = *collectives[0][c];
    for (int r = 1; r < P; ++r)
      if (collectives[r][c]->kind != first.kind ||
          collectives[r][c]->bytes != first.bytes)
        throw Failure{"ranks disagree on a collective"};
    if (first.kind == Message::AllGather) {
      std::vector<char> gathered;
      for (int r = 0; r < P; ++r) {
        const char *data = at(ranks[r], collectives[r][c]->buffer, first.bytes, r);
        gathered.insert(gathered.end(), data, data + first.bytes);
      }
      for (int r = 0; r < P; ++r)
        writes.push_back({r, collectives[r][c]->result, gathered});
    } else {
      // Sums in rank order: ReduceScatter gives rank r slice r of the sum,
      // AllReduce the whole sum to every rank.
      const bool all = first.kind == Message::AllReduce;
      const size_t total = all ? first.bytes : first.bytes * P;
      std::vector<char> sum(total, 0);
      for (int r = 0; r < P; ++r) {
        const char *data = at(ranks[r], collectives[r][c]->buffer, total, r);
        if (first.dtype == GDN_F64)
          sumInto<double>(sum, data, total);
        else if (first.dtype == GDN_F32)
          sumInto<float>(sum, data, total);
        else
          throw Failure{"the simulator sums f32 and f64 only"};
      }
      for (int r = 0; r < P; ++r)
        writes.push_back(
            {r, collectives[r][c]->result,
             all ? sum
                 : std::vector<char>(sum.begin() + r * first.bytes,
                                     sum.begin() + (r + 1) * first.bytes)});
    }
  }
  for (Write &w : writes)
    std::memcpy(at(ranks[w.rank], w.address, w.bytes.size(), w.rank),
                w.bytes.data(), w.bytes.size());
}

} // namespace

std::string runLocalStep(const Step &step, RankMemory &memory, int rank) {
  try {
    runLocal(step, memory, rank);
    return "";
  } catch (const Failure &failure) {
    return failure.what;
  }
}

char *addressOf(RankMemory &memory, Address address, size_t bytes) {
  try {
    return at(memory, address, bytes, 0);
  } catch (const Failure &) {
    return nullptr;
  }
}

std::string simulate(const std::vector<Plan> &plans,
                     std::vector<RankMemory> &ranks) {
  try {
    const int P = static_cast<int>(plans.size());
    std::vector<size_t> next(P, 0);
    size_t groups = 0;
    for (const Step &step : plans[0].steps)
      groups += step.kind == Step::Communicate;
    for (int r = 0; r < P; ++r) {
      size_t count = 0;
      for (const Step &step : plans[r].steps)
        count += step.kind == Step::Communicate;
      if (count != groups)
        return "rank " + std::to_string(r) + " has " + std::to_string(count) +
               " groups, rank 0 has " + std::to_string(groups);
      ranks[r].workspace.assign(plans[r].workspaceBytes, 0x5a);
      ranks[r].ones.assign(onesBytes(), 0);
      writeOnes(ranks[r].ones.data());
    }
    for (size_t g = 0; g <= groups; ++g) {
      std::vector<const Group *> phase(P, nullptr);
      for (int r = 0; r < P; ++r) {
        const auto &steps = plans[r].steps;
        while (next[r] < steps.size() &&
               steps[next[r]].kind != Step::Communicate)
          runLocal(steps[next[r]++], ranks[r], r);
        if (next[r] < steps.size())
          phase[r] = &steps[next[r]++].group;
      }
      if (g < groups)
        communicate(phase, ranks);
    }
    return "";
  } catch (const Failure &failure) {
    return failure.what;
  }
}

} // namespace gdnrt::testing
