// SPDX-License-Identifier: Apache-2.0
/*
 * libdisttrain C++ API: elastic training in Horovod's shape, header-only over disttrain.hpp
 * (dt_context_reform and dt_context_poll_joiners; no symbol of its own). C++17.
 *
 *     disttrain::context ctx;                       // under disttrainrun --elastic
 *     disttrain::elastic::state st(ctx);
 *     st.add(weights.data(), weights.size() * sizeof(float));
 *     st.add(&epoch, sizeof epoch);
 *     st.on_reset([&] { reshard(ctx.rank(), ctx.size()); });
 *     disttrain::elastic::run(st, [&] {
 *         for (; epoch < epochs; ++epoch) {
 *             ...                                   // collectives; a lost peer throws
 *             st.commit();                          // a copy in memory, nothing on disk
 *         }
 *     });
 *
 * The state is a set of byte buffers in host memory that the caller owns (they must stay
 * where they are for the state's life). commit() copies them aside, restore() copies the
 * copy back, sync() gives every rank rank 0's bytes. run() calls the function; when a
 * collective throws disttrain::error with DT_ERR_PEER_LOST it restores every survivor to
 * its last commit, re-forms the job without the dead rank (ranks renumbered, rank 0 stays
 * rank 0 if it lives), syncs from the new rank 0, calls the reset callbacks and calls the
 * function again: work since the last commit is done again, nothing committed is lost.
 * When commit() learns that replacements wait to join (disttrainrun --max-restarts), the
 * ranks re-form with them and every rank, the new ones included, goes on from the state
 * just committed. A re-form that cannot gather DISTTRAIN_MIN_SIZE ranks ends run() with
 * disttrain::error (DT_ERR_TIMEOUT), as does any error other than a lost peer.
 */
#ifndef DISTTRAIN_ELASTIC_HPP
#define DISTTRAIN_ELASTIC_HPP

#include "disttrain.hpp"

#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace disttrain {
namespace elastic {

/** Thrown by state::commit() when new ranks wait to join; run() then re-forms the job
 *  with them and calls the function again from the state just committed. */
class joiners_waiting : public std::runtime_error {
public:
    explicit joiners_waiting(int count)
        : std::runtime_error(std::to_string(count) + " new rank(s) wait to join the job"),
          count_(count) {}
    int count() const noexcept { return count_; }

private:
    int count_;
};

/** What a training function keeps across re-forms: byte buffers in host memory. */
class state {
public:
    /** Collectives (sync, the joiners' poll) run on ctx, whose handle the state shares. */
    explicit state(context ctx) : ctx_(std::move(ctx)) {}

    context &ctx() noexcept { return ctx_; }

    /** Adds `bytes` bytes at `data`; the memory must stay valid and in place (a vector
     *  must not be resized) while the state is used. Add on every rank in the same order. */
    void add(void *data, std::size_t bytes) { buffers_.push_back({data, bytes, {}}); }

    /** Called after each re-form, once the state is synced: re-shard the data for the
     *  new size, rescale the learning rate, ... */
    void on_reset(std::function<void()> callback) { reset_.push_back(std::move(callback)); }

    /** Called when a collective failed with a lost peer, before anything is restored:
     *  free the requests still held (dt_context_reform needs them gone), note the time. */
    void on_peer_lost(std::function<void(const error &)> callback)
    {
        lost_.push_back(std::move(callback));
    }

    /** Total bytes of the buffers (what a commit copies). */
    std::size_t bytes() const noexcept
    {
        std::size_t n = 0;
        for (const buffer &b : buffers_)
            n += b.bytes;
        return n;
    }

    /** Copies every buffer aside (local, no collective). */
    void save()
    {
        for (buffer &b : buffers_) {
            b.saved.resize(b.bytes);
            if (b.bytes > 0)
                std::memcpy(b.saved.data(), b.data, b.bytes);
        }
    }

    /** Copies the last save back into every buffer (one never saved keeps its bytes). */
    void restore()
    {
        for (buffer &b : buffers_)
            if (b.saved.size() == b.bytes && b.bytes > 0)
                std::memcpy(b.data, b.saved.data(), b.bytes);
    }

    /** Collective: every buffer gets rank 0's bytes, all broadcasts in flight at once;
     *  then saves, so that a loss right after goes back to the synced state. */
    void sync()
    {
        if (ctx_.size() > 1) {
            std::vector<request> pending;
            pending.reserve(buffers_.size());
            for (std::size_t i = 0; i < buffers_.size(); ++i) {
                const std::string name = "elastic.state." + std::to_string(i);
                pending.push_back(ctx_.broadcast_async(static_cast<std::uint8_t *>(
                                                           buffers_[i].data),
                                                       buffers_[i].bytes, 0, name.c_str()));
            }
            for (request &r : pending)
                r.wait();
        }
        save();
    }

    /**
     * Collective, at the same step on every rank: asks whether new ranks wait to join
     * (one small broadcast; a lost peer throws here, before anything is saved), then
     * saves. Throws joiners_waiting, after saving, when some wait: run() lets them in.
     */
    void commit()
    {
        const int waiting = ctx_.poll_joiners();
        save();
        if (waiting > 0)
            throw joiners_waiting(waiting);
    }

    void reset()
    {
        for (auto &callback : reset_)
            callback();
    }

    void peer_lost(const error &e)
    {
        for (auto &callback : lost_)
            callback(e);
    }

private:
    struct buffer {
        void *data;
        std::size_t bytes;
        std::vector<unsigned char> saved;
    };
    context ctx_;
    std::vector<buffer> buffers_;
    std::vector<std::function<void()>> reset_;
    std::vector<std::function<void(const error &)>> lost_;
};

/**
 * Calls fn() until it returns, surviving lost ranks and letting replacements in (see the
 * notes at the top). Every entry starts with st.sync(), so a replacement gets the job's
 * state the same way the survivors share the new rank 0's. Returns what fn returns.
 * Throws disttrain::error for any error but a lost peer, and when the job cannot re-form
 * (fewer than DISTTRAIN_MIN_SIZE ranks left: DT_ERR_TIMEOUT, with the library's reason).
 */
template <typename Fn>
auto run(state &st, Fn &&fn) -> decltype(fn())
{
    bool reformed = false;
    for (;;) {
        try {
            st.sync(); // a rank may die here too
            if (reformed)
                st.reset();
            return fn();
        } catch (const error &e) {
            if (e.status() != DT_ERR_PEER_LOST)
                throw;
            st.peer_lost(e);
            st.restore();
        } catch (const joiners_waiting &) {
            // The state is as just committed on every rank.
        }
        try {
            st.ctx().reform();
        } catch (const error &e) {
            throw error(e.status(), std::string("elastic: dt_context_reform: ") +
                                        e.what());
        }
        reformed = true;
    }
}

} // namespace elastic
} // namespace disttrain

#endif /* DISTTRAIN_ELASTIC_HPP */
