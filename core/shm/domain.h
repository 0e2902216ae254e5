/* SPDX-License-Identifier: Apache-2.0 */
// The shared-memory domain of one context: this rank's segment and read-only mappings
// of the segments of every other rank on the host, set up once through the rendezvous
// store. Collectives (collectives.h) run over a Team: the domain's ranks that take part
// in one call.
#pragma once

#include "bootstrap/store.h"
#include "shm/layout.h"
#include "shm/path_choice.h"
#include "shm/segment.h"
#include "shm/settings.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace dt::shm {

// Single-copy reads of the peers' buffers (process_vm_readv) in allreduce.
struct CmaOptions {
    bool enabled = true;     // DISTTRAIN_SHM_CMA (attach.cc)
    size_t min_bytes = 0;    // smallest allreduce that reads the peers' buffers directly;
                             // 0: tuning()'s threshold. Tests lower it.
    size_t piece_bytes = 0;  // bytes per piece of a rank's slice; 0: tuning()'s
    int force_path = -1;     // tests: as the first member of a call, always choose this
                             // path (path_choice.h: 0 staging, 1 single copy, 2 staging
                             // through memory); -1: time them
    bool fail_probe = false; // tests: the probe fails as if the kernel said EPERM
};

struct DomainOptions {
    int rank = 0;              // world rank
    int size = 1;              // world size
    int local_rank = 0;        // index on the host
    int local_size = 1;        // ranks on the host: world ranks [rank-local_rank, +local_size)
    size_t data_bytes = 0;     // staging area per rank; 0: kDefaultDataBytes
    std::string key_prefix;    // store namespace of this context, e.g. "ctx0/shm/"
    std::chrono::milliseconds timeout{0}; // store waits; 0: none
    // Once this store key is set, every set-up wait gives up (DT_ERR_CONNECT with its
    // value): a member of a re-formed elastic job died. Empty: plain waits.
    std::string abandon_key;
    // The policy's overrides of the measured thresholds and waits (tuning.cc, team.cc).
    TuningOverrides tuning;
    CmaOptions cma;
};

// Staging area per rank. Measured (tests/bench): 4 MiB keeps the pieces in flight inside
// L2 + L3 and costs 4 MiB of /dev/shm per rank.
constexpr size_t kDefaultDataBytes = 4 << 20;

class Domain {
public:
    // Every rank of the host calls this at the same time (it meets the others through
    // the store). Segment names derive from a random nonce that the host's first rank
    // puts in the store; each rank creates its own, maps the peers', and unlinks its own
    // once every rank has mapped them all. Before that last rendezvous each rank probes
    // every peer with process_vm_readv and publishes whether it could read them all.
    Domain(bootstrap::StoreClient &store, const DomainOptions &opts);
    // Marks the segment closed, so a peer still waiting on this rank fails at once.
    ~Domain();
    Domain(const Domain &) = delete;
    Domain &operator=(const Domain &) = delete;

    int local_rank() const { return local_rank_; }
    int local_size() const { return local_size_; }
    int world_rank() const { return world_rank_; }
    int world_size() const { return world_size_; }
    // Index on this host of a world rank, or -1 when it runs on another host.
    int local_index(int world_rank) const
    {
        int i = world_rank - host_start_;
        return i >= 0 && i < local_size_ ? i : -1;
    }
    // Host (identified by its first world rank) of any world rank.
    int host_of(int world_rank) const { return host_start_of_[world_rank]; }
    size_t data_bytes() const { return data_bytes_; }

    Control &mine() { return *ctl_[local_rank_]; }
    const Control &control(int local) const { return *ctl_[local]; }
    std::byte *my_data() { return data_[local_rank_]; }
    const std::byte *data(int local) const { return data_[local]; }
    int pid(int local) const { return pids_[local]; }
    int world_rank_of(int local) const { return host_start_ + local; }

    // False once peer `local` has exited (a killed process included; never a reused pid).
    bool alive(int local) const;

    // Acks peers must give before this rank overwrites its segment again. An ack counts
    // the calls the two ranks took part in together: both count the same calls in the
    // same order, so it only grows, whatever the calls' tags (a group's tags need not
    // follow the job's, see Engine::next_op_tag).
    uint64_t &owed(int local) { return owed_[local]; }
    uint64_t &calls_with(int local) { return calls_with_[local]; }
    // The same for one tag line alone (layout.h: the two are written in turn): what a
    // call that writes nothing else of the segment waits for.
    uint64_t &owed_line(int line, int local) { return owed_line_[line][local]; }
    // What peer `local` is known to have acked already, without reading its ack line
    // again: a peer that published a call has finished, and acked, every call before.
    uint64_t &acked(int local) { return acked_[local]; }
    // The tag line the next call publishes in.
    int next_line() const { return next_line_; }
    void flip_line() { next_line_ ^= 1; }

    // After a failure the segments are out of step: every later call is refused, and
    // peers waiting on this rank see it failed.
    // reason: why, for the peers' messages (the first failure's reason is kept).
    void mark_failed(const std::string &reason = "");
    bool failed() const { return failed_; }
    const std::string &segment_name(int local) const { return names_[local]; }
    const TuningOverrides &tuning_overrides() const { return tuning_; }
    // Reused between calls so that routing a call allocates nothing.
    std::vector<int> &scratch() { return scratch_; }

    // Whether rank `local` could read every peer's memory at attach time (its own probe
    // and DISTTRAIN_SHM_CMA). The same answer on every rank: a call reads the peers'
    // buffers directly only when this holds for all its members, so all pick one path.
    bool cma(int local) const { return cma_[local] != 0; }
    const CmaOptions &cma_options() const { return cma_options_; }
    // Scratch for the single-copy allreduce: at least bytes, page-aligned; grown on
    // first use (its size depends on the piece size, not on the call), then kept. Null
    // when it cannot be had.
    std::byte *cma_scratch(size_t bytes);
    // Times of this rank's large allreduces as the first member of a call, by path: it
    // chooses the path of the next ones (path_choice.h).
    PathChooser &path_chooser() { return path_chooser_; }
    // Calls that took the single-copy path (tests, logs).
    uint64_t cma_calls() const { return cma_calls_; }
    void count_cma_call() { ++cma_calls_; }

private:
    void meet(bootstrap::StoreClient &store, const DomainOptions &opts);
    void learn_hosts(bootstrap::StoreClient &store, const DomainOptions &opts);
    // Reads every peer's probe word; returns why not ("" when all could be read).
    std::string probe_peers();

    int world_rank_, world_size_, local_rank_, local_size_, host_start_;
    size_t data_bytes_;
    std::vector<Segment> segments_;
    std::vector<std::string> names_;
    std::vector<Control *> ctl_;
    std::vector<std::byte *> data_;
    std::vector<int> pids_;
    std::vector<int> pidfds_;
    std::vector<uint64_t> owed_;
    std::vector<uint64_t> calls_with_;
    std::vector<uint64_t> owed_line_[2];
    std::vector<uint64_t> acked_;
    int next_line_ = 0;
    std::vector<int> host_start_of_;
    TuningOverrides tuning_;
    std::vector<int> scratch_;
    bool failed_ = false;
    CmaOptions cma_options_;
    std::vector<uint8_t> cma_;
    // Read by the peers' probes: lives as long as the domain, at a fixed address.
    uint64_t probe_word_ = 0;
    struct Free {
        void operator()(std::byte *p) const { std::free(p); }
    };
    std::unique_ptr<std::byte, Free> cma_scratch_;
    size_t cma_scratch_bytes_ = 0;
    uint64_t cma_calls_ = 0;
    PathChooser path_chooser_;
};

} // namespace dt::shm
